"""Prompt lookup on the device: the torch reference against the host proposer of
engine/spec/proposers/lookup.py, on random histories over small vocabularies (so suffixes repeat
at every n-gram size), rows of every length from empty up, history rows longer than their tokens
and a batch that reads rows out of order. The Triton search (`source_of`) runs inside the plan
kernel and is checked against this reference there (test_plan_lookup.py)."""

from __future__ import annotations

import random

import pytest
import torch

from turnspec.engine.spec.proposers.lookup import ngram_lookup
from turnspec.kernels.ngram_lookup import reference_ngram_lookup


def random_history(seed: int, rows: int, cap: int, vocab: int) -> tuple[torch.Tensor, torch.Tensor, list[list[int]]]:
    rng = random.Random(seed)
    hist = torch.full((rows, cap), 7777, dtype=torch.int64)  # past each row's length: junk
    lengths, tokens = [], []
    for r in range(rows):
        n = rng.choice([0, 1, 2, 3, rng.randrange(cap + 1), cap])
        toks = [rng.randrange(vocab) for _ in range(n)]
        if n > 40 and rng.random() < 0.5:  # a copy in progress: the tail repeats a long span
            at = rng.randrange(n - 30)
            toks[-20:] = toks[at : at + 20]
        hist[r, :n] = torch.tensor(toks, dtype=torch.int64)
        lengths.append(n)
        tokens.append(toks)
    return hist, torch.tensor(lengths, dtype=torch.int64), tokens


@pytest.mark.parametrize(("seed", "rows", "cap", "vocab", "width"),
                         [(0, 6, 12, 3, 4), (1, 8, 200, 5, 15), (2, 5, 1500, 40, 15),
                          (3, 4, 2100, 2, 7), (4, 7, 64, 9, 1)])
def test_the_reference_finds_what_the_host_lookup_finds(seed: int, rows: int, cap: int,
                                                               vocab: int, width: int) -> None:
    hist, lengths, tokens = random_history(seed, rows, cap, vocab)
    order = torch.tensor(random.Random(seed).sample(range(rows), rows) + [0], dtype=torch.int64)
    want = [ngram_lookup(tokens[r], width) for r in order.tolist()]
    cont, n, match = reference_ngram_lookup(hist, lengths, order, width)
    got = [(c[: k], m) for c, k, m in zip(cont.tolist(), n.tolist(), match.tolist(), strict=True)]
    assert got == want
    assert all(t == -1 for c, k in zip(cont.tolist(), n.tolist(), strict=True) for t in c[k:])
    assert sum(len(c) > 0 for c, _ in want) >= 2            # the cases do find copies


def test_shapes_dtypes_and_width_are_checked() -> None:
    hist, lengths = torch.zeros((2, 8), dtype=torch.int64), torch.zeros(2, dtype=torch.int64)
    rows = torch.zeros(1, dtype=torch.int64)
    with pytest.raises(ValueError, match=r"expected \[R, C\], \[R\], \[b\]"):
        reference_ngram_lookup(hist, lengths[:1], rows, 4)
    with pytest.raises(ValueError, match="expected int64"):
        reference_ngram_lookup(hist.to(torch.int32), lengths, rows, 4)
    with pytest.raises(ValueError, match="width: expected >= 1"):
        reference_ngram_lookup(hist, lengths, rows, 0)
