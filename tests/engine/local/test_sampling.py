"""engine/local/sampling.py: the filtered distributions against hand-computed ones, draws that
follow them, and a row's draw that does not depend on what else is batched."""

from __future__ import annotations

import math

import torch

from turnspec.engine.local.sampling import filter_logits, sample_rows
from turnspec.engine.protocol import SamplingParams

LOGITS = [2.0, 1.0, 0.5, 0.0, -1.0, 3.0]


def reference(logits: list[float], t: float, top_k: int, top_p: float) -> list[float]:
    """Temperature, top-k, then the smallest top-p prefix, written out by hand."""
    order = sorted(range(len(logits)), key=lambda i: -logits[i])
    keep = set(order[:top_k] if top_k else order)
    w = {i: math.exp(logits[i] / t) for i in keep}
    p = {i: w[i] / sum(w.values()) for i in keep}
    kept, mass = set(), 0.0
    for i in order:
        if i in p and mass < top_p:
            kept.add(i)
            mass += p[i]
    z = sum(p[i] for i in kept)
    return [p[i] / z if i in kept else 0.0 for i in range(len(logits))]


def test_filter_matches_hand_computed_distribution() -> None:
    params = SamplingParams(temperature=0.7, top_k=5, top_p=0.9)
    got = filter_logits(torch.tensor([LOGITS, LOGITS]), params)
    want = reference(LOGITS, 0.7, 5, 0.9)
    assert want[4] == 0.0 and sum(w > 0 for w in want) == 2  # top-k cut one, top-p three more
    for row in got:
        assert torch.allclose(row, torch.tensor(want), atol=1e-6)


def test_draws_follow_the_filtered_distribution_and_skip_dropped_tokens() -> None:
    params = SamplingParams(temperature=1.3, top_k=0, top_p=0.95)
    want = torch.tensor(reference(LOGITS, 1.3, 0, 0.95))
    n = 20000
    gens = [torch.Generator().manual_seed(i) for i in range(n)]
    tokens = sample_rows(torch.tensor([LOGITS] * n), [params] * n, gens)
    counts = torch.bincount(tokens, minlength=len(LOGITS)).double()
    assert counts[want == 0].sum() == 0
    tv = 0.5 * (counts / n - want).abs().sum().item()
    assert tv < 0.02, f"total variation {tv:.4f} from the filtered distribution"


def test_a_rows_draw_ignores_the_rest_of_the_batch() -> None:
    sampled = SamplingParams(temperature=0.8, top_p=0.9)
    alone = sample_rows(torch.tensor([LOGITS]), [sampled], [torch.Generator().manual_seed(7)])
    others = [SamplingParams(), SamplingParams(temperature=1.0), sampled]
    batch = torch.tensor([LOGITS[::-1], LOGITS[1:] + LOGITS[:1], LOGITS])
    gens = [None, torch.Generator().manual_seed(3), torch.Generator().manual_seed(7)]
    together = sample_rows(batch, others, gens)
    assert together[2] == alone[0]
    assert together[0] == 0  # the greedy row: argmax of the reversed logits
