"""Pure sampling math: logits in, tokens out. Greedy rows take argmax; sampled rows apply
temperature, top-k and top-p, then draw with the request's own generator (so a seed
reproduces a stream regardless of what else is batched)."""

from __future__ import annotations

import torch

from turnspec.engine.protocol import SamplingParams


def filter_logits(logits: torch.Tensor, params: SamplingParams) -> torch.Tensor:
    """[..., V] fp32 logits -> probabilities after temperature / top-k / top-p, row by row
    (every row with the same `params`)."""
    x = logits / params.temperature
    if params.top_k and params.top_k < x.shape[-1]:
        kth = torch.topk(x, params.top_k, dim=-1).values[..., -1:]
        x = x.masked_fill(x < kth, float("-inf"))
    probs = torch.softmax(x, dim=-1)
    if params.top_p < 1.0:
        sorted_p, idx = torch.sort(probs, dim=-1, descending=True)
        cum = torch.cumsum(sorted_p, dim=-1)
        drop = (cum - sorted_p) >= params.top_p  # keep the smallest prefix reaching top_p
        sorted_p = sorted_p.masked_fill(drop, 0.0)
        probs = torch.zeros_like(probs).scatter_(-1, idx, sorted_p)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs


def draw(probs: torch.Tensor, generators: list[torch.Generator | None]) -> torch.Tensor:
    """probs [m, V] -> tokens [m] int64: one uniform per row from that row's generator (CPU; None:
    torch's global one), mapped through the row's cumulative distribution: the first token whose
    cumulative value exceeds u x the row's total. That token has nonzero probability (its
    cumulative value rises there), and it exists, since u < 1 keeps the point below the total."""
    u = torch.cat([torch.rand(1, generator=g) for g in generators])
    cum = torch.cumsum(probs, dim=-1)
    point = u.to(device=probs.device, dtype=cum.dtype) * cum[:, -1]  # [m]
    return torch.searchsorted(cum, point.unsqueeze(1), right=True).squeeze(1)


def sample_rows(logits: torch.Tensor, params: list[SamplingParams],
                generators: list[torch.Generator | None]) -> torch.Tensor:
    """logits [m, V] fp32 (already grammar-masked) -> tokens [m] int64 on logits' device.

    Sampled rows with the same settings are filtered and drawn together on logits' device: a
    few batched kernels a step rather than a host sort of the vocabulary per row, which held a
    GPU that sampled hundreds of rows (datagen's Magpie lines) at a few percent busy. Each
    row's uniform still comes from its own CPU generator.
    """
    tokens = logits.argmax(dim=-1)
    groups: dict[tuple[float, int, float], list[int]] = {}
    for i, p in enumerate(params):
        if not p.greedy:
            groups.setdefault((p.temperature, p.top_k, p.top_p), []).append(i)
    for rows in groups.values():
        index = torch.tensor(rows, device=logits.device)
        probs = filter_logits(logits.index_select(0, index).float(), params[rows[0]])
        tokens[index] = draw(probs, [generators[i] for i in rows])
    return tokens
