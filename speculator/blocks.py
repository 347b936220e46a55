"""Training blocks: random anchors, block inputs, same-position labels, decayed CE weights.

All pure tensor functions on the device (no host syncs). A block anchored at position `a` is
`[x_a, MASK x (B-1)]` at positions a..a+B-1, and slot k (1..B-1) is trained to predict
x[a+k], the token AT its own position (no shift: shifted labels were the other half of
SpecForge's tau~1.3 bug, #455/#473). Slot 0 (the anchor) carries no loss.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def anchor_candidates(loss_mask: Tensor) -> Tensor:
    """loss_mask [b, S] bool -> [b, S] bool: i is an anchor if loss_mask[i] and loss_mask[i+1]
    (the anchor is a target-generated token and so is at least its first prediction)."""
    nxt = torch.zeros_like(loss_mask)
    nxt[:, :-1] = loss_mask[:, 1:]
    return loss_mask & nxt


def sample_anchors(loss_mask: Tensor, num_anchors: int,
                   generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
    """Up to num_anchors distinct random anchors per row.

    loss_mask [b, S] bool -> anchors [b, N] int64 (sorted), valid [b, N] bool (False where a row
    has fewer than N candidates; those anchors point at some non-candidate position and must
    carry no loss). N = min(num_anchors, S).
    """
    cand = anchor_candidates(loss_mask)
    noise = torch.rand(cand.shape, device=cand.device, generator=generator)
    scores = torch.where(cand, noise + 1.0, noise * 0.5)         # candidates in [1, 2)
    n = min(num_anchors, cand.shape[1])
    top, idx = scores.topk(n, dim=-1)
    valid = top >= 1.0
    idx, order = idx.sort(dim=-1)
    return idx, valid.gather(-1, order)


def block_inputs(input_ids: Tensor, anchors: Tensor, block_size: int, mask_token_id: int) -> Tensor:
    """input_ids [b, S], anchors [b, N] -> block token ids [b, N, B]: [x_anchor, MASK...]."""
    blocks = torch.full((*anchors.shape, block_size), mask_token_id, dtype=input_ids.dtype,
                        device=input_ids.device)
    blocks[..., 0] = input_ids.gather(1, anchors)
    return blocks


def block_labels(input_ids: Tensor, loss_mask: Tensor, anchors: Tensor, anchor_valid: Tensor,
                 block_size: int) -> tuple[Tensor, Tensor]:
    """Same-position labels: labels[b, n, k] = x[anchor + k].

    Returns labels [b, N, B] int64 and label_ok [b, N, B] bool (inside the sequence, on a
    target-generated token, anchor valid, k >= 1). Positions past the end read as not ok.
    """
    b, s = input_ids.shape
    offs = torch.arange(block_size, device=input_ids.device)
    pos = anchors[..., None] + offs                                   # [b, N, B]
    inside = pos < s
    flat = pos.clamp(max=s - 1).flatten(1)
    labels = input_ids.gather(1, flat).view_as(pos)
    ok = loss_mask.gather(1, flat).view_as(pos) & inside & anchor_valid[..., None]
    ok[..., 0] = False
    return labels, ok


def decay_weights(block_size: int, gamma: float, device: torch.device | str = "cpu") -> Tensor:
    """[B] float32: w_0 = 0 (anchor), w_k = exp(-(k-1)/gamma) for k >= 1 (paper Eq. 4)."""
    k = torch.arange(block_size, dtype=torch.float32, device=device)
    w = torch.exp(-(k - 1) / gamma)
    w[0] = 0.0
    return w


def accepted_prefix(drafts: Tensor, labels: Tensor, ok: Tensor) -> Tensor:
    """Greedy acceptance of one block: drafts/labels/ok [..., B-1] for slots 1..B-1
    -> [...] int64, the number of leading slots whose draft equals the (valid) label."""
    return ((drafts == labels) & ok).long().cumprod(-1).sum(-1)


def cosine_lr(step: int, total: int, warmup: int, peak: float, floor: float = 0.0) -> float:
    """Linear warmup to `peak`, then cosine to `floor` at `total` (host-side float: no sync)."""
    if step < warmup:
        return peak * (step + 1) / warmup
    t = min(1.0, (step - warmup) / max(1, total - warmup))
    return floor + 0.5 * (peak - floor) * (1.0 + math.cos(math.pi * t))
