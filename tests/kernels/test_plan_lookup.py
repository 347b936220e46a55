"""The plugin's plan in two launches: the `choose` kernel (lookup, rule, swap, counters) against
its torch reference (the planner's rule arithmetic, lookup_rule.py, over the lookup reference
test_ngram_lookup.py checks against the host proposer), and the `append` kernel against
DeviceHistory's own append (its reference off CUDA), the kernels interpreted on the CPU (on the
GPU where there is one), on random kept tokens over small vocabularies so copies are found, and
rows longer than the kernel's search block."""

from __future__ import annotations

import random

import pytest
import torch

from turnspec.engine.sglang_plugin.history import DeviceHistory
from turnspec.engine.spec.planner import LOOKUP_AGREE, LOOKUP_MATCH
from turnspec.kernels.plan_lookup import reference_choose, triton_append, triton_choose

DEV = "cuda" if torch.cuda.is_available() else "cpu"


def random_plan(seed: int, b: int, width: int, cap: int = 48, vocab: int = 4) -> dict:
    rng = random.Random(seed)
    g = torch.Generator().manual_seed(seed)
    rows_total = 2 * b
    hist = torch.randint(0, vocab, (rows_total, cap + 1), generator=g)
    lengths = torch.tensor([rng.choice([0, 1, 3, rng.randrange(cap + 1), cap])
                            for _ in range(rows_total)])
    rows = torch.tensor(rng.sample(range(rows_total), b), dtype=torch.int32)
    blocks = torch.randint(0, 4, (b, 1 + width), generator=g)
    for i, r in enumerate(rows.tolist()):  # mostly anchored at the row's last kept token
        if lengths[r] > 0 and rng.random() < 0.85:
            blocks[i, 0] = hist[r, lengths[r] - 1]
    lp = (torch.rand(b * width, generator=g) * 0.999 + 0.001).log()
    flags = torch.tensor([[rng.random() < 0.85, rng.random() < 0.5] for _ in range(b)],
                         dtype=torch.int32)
    return {"hist": hist, "lengths": lengths, "rows": rows, "blocks": blocks, "lp": lp,
            "flags": flags, "below": rng.choice([0.5, 2.0, 3.5])}


CASES = [(s, 1 + s % 7, (3, 15, 1, 7)[s % 4], 48, 4) for s in range(12)]
CASES += [(12, 3, 15, 1500, 40), (13, 2, 15, 2100, 4)]  # past the kernel's 1,024-token block


@pytest.mark.parametrize("tree", [False, True])
@pytest.mark.parametrize(("seed", "b", "width", "cap", "vocab"), CASES)
def test_choose_swaps_and_counts_as_its_torch_reference(seed: int, b: int, width: int, cap: int,
                                                        vocab: int, tree: bool) -> None:
    """Also for verify trees: the same swaps, and every row's continuation and whether it
    branches come out (the side buffers start as junk: each cell must be written)."""
    case = random_plan(seed, b, width, cap, vocab)
    below = case.pop("below")
    out = {}
    for name, fn in (("torch", reference_choose), ("kernel", triton_choose)):
        args = {k: v.clone().to(DEV) for k, v in case.items()}
        counts = torch.zeros(3, dtype=torch.int64, device=DEV)
        side = (torch.full((b, width), 7, device=DEV), torch.tensor([i % 2 == 0 for i in range(b)],
                                                                    device=DEV))
        fn(args["hist"], args["lengths"], args["rows"], args["blocks"], args["lp"], args["flags"],
           counts, below=below, agree=LOOKUP_AGREE, match_min=LOOKUP_MATCH,
           tree=side if tree else None)
        out[name] = (args["blocks"].tolist(), counts.tolist(), side[0].tolist(), side[1].tolist())
    assert out["kernel"] == out["torch"]
    if tree:  # the plain mode's swaps; a row branches where it may plan and did not swap
        plain = {k: v.clone() for k, v in case.items()}
        reference_choose(**plain, counts=torch.zeros(3, dtype=torch.int64), below=below,
                         agree=LOOKUP_AGREE, match_min=LOOKUP_MATCH)
        blocks, _, cont, branch = out["torch"]
        assert blocks == plain["blocks"].tolist()
        ok = [bool(f) for f in case["flags"][:, 0].tolist()]
        take = [o and not br for o, br in zip(ok, branch, strict=True)]
        assert not any(br and not o for o, br in zip(ok, branch, strict=True))
        for i in range(b):
            assert plain["blocks"][i].tolist() == case["blocks"][i].tolist() or take[i]
            if take[i]:
                n = sum(t >= 0 for t in cont[i])
                assert cont[i][:n] == plain["blocks"][i, 1 : 1 + n].tolist()


def test_the_cases_swap_and_miss() -> None:
    """The random cases above exercise every outcome: swaps, grammar swaps, history misses."""
    total = torch.zeros(3, dtype=torch.int64)
    for seed in range(12):
        case = random_plan(seed, 1 + seed % 7, (3, 15, 1, 7)[seed % 4])
        below = case.pop("below")
        reference_choose(**case, counts=total, below=below, agree=LOOKUP_AGREE,
                         match_min=LOOKUP_MATCH)
    assert (total > 0).all(), total


@pytest.mark.parametrize("stride", [1, 4, 16])
def test_append_is_the_history_append(stride: int) -> None:
    g = torch.Generator().manual_seed(stride)
    ref = DeviceHistory(6, 20, "cpu")
    ref.tokens.copy_(torch.randint(0, 9, ref.tokens.shape, generator=g))
    ref.lengths.copy_(torch.tensor([0, 5, 19, 20, 3, 12]))
    rows = torch.tensor([2, 0, 3, 5], dtype=torch.int32)
    tokens = torch.randint(0, 9, (4 * stride,), generator=g)
    counts = torch.tensor([stride, 1, stride, max(1, stride // 2)], dtype=torch.int32)
    for c in (counts, None):
        tok, lens = ref.tokens.clone().to(DEV), ref.lengths.clone().to(DEV)
        triton_append(tok, lens, rows.to(DEV), tokens.to(DEV), c.to(DEV) if c is not None else None,
                      stride)
        want = DeviceHistory(6, 20, "cpu")
        want.tokens.copy_(ref.tokens)
        want.lengths.copy_(ref.lengths)
        want.append(rows, tokens, c, stride)
        assert lens.tolist() == want.lengths.tolist()
        kept = [tok[r, : want.lengths[r]].tolist() for r in range(6)]
        assert kept == [want.tokens[r, : want.lengths[r]].tolist() for r in range(6)]


def test_warm_runs_both_kernels_for_a_block() -> None:
    from turnspec.kernels.plan_lookup import warm
    warm(15, DEV, agree=LOOKUP_AGREE, match_min=LOOKUP_MATCH)
    warm(1, DEV, agree=LOOKUP_AGREE, match_min=LOOKUP_MATCH)
    warm(15, DEV, agree=LOOKUP_AGREE, match_min=LOOKUP_MATCH, tree=True)
