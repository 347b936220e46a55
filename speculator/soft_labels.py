"""Soft labels: the target's own next-token distribution as the drafter's training target.

Slot k of the block anchored at `a` predicts x[a+k]. The hard label is that token, which for
greedy data is the argmax of the target's distribution at position a+k-1 (causal: it has seen
x[..a+k-1], exactly the prefix under which slot k is accepted online). The soft label is that
distribution itself, kept as its top-k (renormalized): where the target hesitates between
wordings, the drafter learns the ranking instead of one arbitrary winner (distillation;
docs/drafter-training.md).

Measured (H200, docs/history/notes/run11-soft-labels.md): w = 0.5 beside plain CE on
the same data, init and budget gave held-out tool tau 4.84 against 4.87 (no gain, and 12% fewer
steps in the time), so training defaults to w = 0.

Pure tensor functions, no host syncs. The target's LM head runs only over each row's response
window (its first to last response token, `PackedSplit.spans`), ~76 positions a row instead of
the ~1,050 of a tool prompt, and each slot reads its distribution from that window.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor


def response_start(loss_mask: Tensor) -> Tensor:
    """loss_mask [b, S] bool -> [b] int64, each row's first response position (0 if none)."""
    return loss_mask.to(torch.uint8).argmax(dim=1)


def window_topk(final_hidden: Tensor, start: Tensor, span: int, k: int,
                head: Callable[[Tensor], Tensor]) -> tuple[Tensor, Tensor]:
    """The target's top-k next-token distribution over each row's response window.

    final_hidden [b, S, H] (the target's final-normed hidden states), start [b] int64, span =
    window length; head maps [..., H] -> [..., V] logits. Window slot j of row r is position
    start[r] + j (clamped to the row). Returns probs [b, span, k] float32 (renormalized over the
    top k) and token ids [b, span, k] int64, best first.
    """
    b, s, h = final_hidden.shape
    pos = (start[:, None] + torch.arange(span, device=start.device)).clamp(max=s - 1)
    hid = final_hidden.gather(1, pos[..., None].expand(b, span, h))        # [b, span, H]
    top, ids = head(hid).topk(k, dim=-1)                                    # [b, span, k]
    return top.float().softmax(dim=-1), ids


def slot_targets(probs: Tensor, ids: Tensor, start: Tensor, anchors: Tensor,
                 block_size: int) -> tuple[Tensor, Tensor]:
    """Soft labels of every block slot 1..B-1.

    probs/ids [b, span, k] from `window_topk`, start [b], anchors [b, N] int64. Slot k of the
    block at anchor a reads window index a + k - 1 - start (the target's distribution at
    position a+k-1, whose next token is x[a+k], the slot's hard label). Out-of-window indices
    (invalid anchors, slots past the response) are clamped: those slots carry no loss weight.
    Returns probs [b, N, B-1, k] and ids [b, N, B-1, k].
    """
    b, span, k = probs.shape
    offs = torch.arange(block_size - 1, device=anchors.device)              # slot k - 1
    win = (anchors[..., None] + offs - start[:, None, None]).clamp(0, span - 1)  # [b, N, B-1]
    flat = win.flatten(1)[..., None].expand(-1, -1, k)                      # [b, N*(B-1), k]
    shape = (*win.shape, k)
    return probs.gather(1, flat).view(shape), ids.gather(1, flat).view(shape)


def mixed_cross_entropy(logits: Tensor, labels: Tensor, soft_probs: Tensor, soft_ids: Tensor,
                        soft_weight: float) -> Tensor:
    """Per-slot loss (1 - w) * CE(hard label) + w * CE(soft label).

    logits [..., V] (drafter), labels [...] int64, soft_probs/soft_ids [..., k] (probs summing
    to 1); computed in float32. With w = 0 this equals `F.cross_entropy(..., reduction="none")`.
    Written as logsumexp(z) - sum_j c_j z_j over the k+1 weighted tokens (the c_j sum to 1): one
    gather, so the backward holds one dense [..., V] gradient besides logsumexp's, as plain CE
    does (two log-prob gathers would hold three; at 61k slots x 49k vocab each is 12 GB).
    Returns [...].
    """
    if not 0.0 <= soft_weight <= 1.0:
        raise ValueError(f"soft_weight: expected 0..1, got {soft_weight}")
    z = logits.float()
    idx = torch.cat([labels[..., None], soft_ids], dim=-1)                  # [..., k+1]
    c = torch.cat([torch.full_like(soft_probs[..., :1], 1.0 - soft_weight),
                   soft_weight * soft_probs], dim=-1)
    return torch.logsumexp(z, dim=-1) - (c * z.gather(-1, idx)).sum(-1)
