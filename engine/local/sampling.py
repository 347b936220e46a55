"""Pure sampling math: logits in, tokens out. Greedy rows take argmax; sampled rows apply
temperature, top-k and top-p, then draw with the request's own generator (so a seed
reproduces a stream regardless of what else is batched)."""

from __future__ import annotations

import torch

from turnspec.engine.protocol import SamplingParams


def filter_logits(logits: torch.Tensor, params: SamplingParams) -> torch.Tensor:
    """[V] fp32 logits -> probabilities after temperature / top-k / top-p."""
    x = logits / params.temperature
    if params.top_k and params.top_k < x.shape[-1]:
        kth = torch.topk(x, params.top_k).values[-1]
        x = x.masked_fill(x < kth, float("-inf"))
    probs = torch.softmax(x, dim=-1)
    if params.top_p < 1.0:
        sorted_p, idx = torch.sort(probs, descending=True)
        cum = torch.cumsum(sorted_p, dim=-1)
        drop = (cum - sorted_p) >= params.top_p  # keep the smallest prefix reaching top_p
        sorted_p = sorted_p.masked_fill(drop, 0.0)
        probs = torch.zeros_like(probs).scatter_(-1, idx, sorted_p)
        probs = probs / probs.sum()
    return probs


def sample_rows(logits: torch.Tensor, params: list[SamplingParams],
                generators: list[torch.Generator | None]) -> torch.Tensor:
    """logits [m, V] fp32 (already grammar-masked) -> tokens [m] int64 on logits' device.

    Generators live on the CPU (seeded streams are device-independent); sampled rows are few
    per step, so they are drawn row by row from CPU probabilities.
    """
    tokens = logits.argmax(dim=-1)
    sampled = [i for i, p in enumerate(params) if not p.greedy]
    if sampled:
        cpu = logits[sampled].float().cpu()
        draws = []
        for j, i in enumerate(sampled):
            probs = filter_logits(cpu[j], params[i])
            draws.append(torch.multinomial(probs, 1, generator=generators[i]))
        tokens[sampled] = torch.cat(draws).to(tokens.device)
    return tokens
