"""DFlash attention masks: pure tensor functions shared by training, evaluation and inference.

Keys are [context rows ; block rows]. A query in the block anchored at position `a` sees
  * context rows at positions strictly before its anchor (`ctx_pos < a`; `<=` would leak the
    anchor's own target feature, one of the two bugs behind SpecForge's tau~1.3, #455/#473);
  * rows of its own block only: bidirectional for `full_attention` layers, causal plus window
    for `sliding_attention` layers (SGLang DECODER type, SpecForge `kv_block_offset <= q`).
`True` means "may attend" (torch SDPA boolean-mask convention).
"""

from __future__ import annotations

import torch
from torch import Tensor


def dflash_mask(q_pos: Tensor, q_anchor: Tensor, q_block: Tensor, ctx_pos: Tensor,
                ctx_valid: Tensor, *, causal: bool, window: int | None) -> Tensor:
    """Boolean attention mask over [context ; block] keys.

    q_pos [b, Q] int64 absolute positions of the block queries (also the block keys),
    q_anchor [b, Q] int64 anchor position of each query's block, q_block [b, Q] block index,
    ctx_pos [b, C] int64 absolute positions of the context rows, ctx_valid [b, C] bool.
    Returns [b, 1, Q, C + Q] bool.
    """
    qp = q_pos[:, :, None]                                                 # [b, Q, 1]
    cp = ctx_pos[:, None, :]                                               # [b, 1, C]
    ctx = ctx_valid[:, None, :] & (cp < q_anchor[:, :, None])              # [b, Q, C]
    kp = q_pos[:, None, :]                                                 # [b, 1, Q]
    blk = q_block[:, :, None] == q_block[:, None, :]                       # [b, Q, Q]
    if causal:
        blk = blk & (kp <= qp)
    if window is not None:
        ctx = ctx & (qp - cp < window)
        blk = blk & ((qp - kp).abs() < window)
    return torch.cat([ctx, blk], dim=-1)[:, None]


def inference_mask(block_positions: Tensor, ctx_lens: Tensor, ctx_len_max: int, *,
                   causal: bool, window: int | None) -> Tensor:
    """Mask for `forward_block`: one block per row, anchor at block_positions[:, 0].

    block_positions [b, B] int64; ctx_lens [b] int64. Context row j of row b is valid for
    j < ctx_lens[b]; the valid rows are taken to be the ctx_lens[b] positions right before the
    anchor (only the sliding window reads their positions). Returns [b, 1, B, L + B] bool.
    """
    b, blk = block_positions.shape
    anchor = block_positions[:, :1]                                        # [b, 1]
    j = torch.arange(ctx_len_max, device=block_positions.device)[None, :]  # [1, L]
    ctx_valid = j < ctx_lens[:, None]                                      # [b, L]
    ctx_pos = anchor - ctx_lens[:, None] + j                               # [b, L]
    q_block = torch.zeros(b, blk, dtype=torch.long, device=block_positions.device)
    return dflash_mask(block_positions, anchor.expand(b, blk), q_block, ctx_pos, ctx_valid,
                       causal=causal, window=window)


def training_mask(anchors: Tensor, seq_len: int, block_size: int, *, causal: bool,
                  window: int | None) -> Tensor:
    """Mask for N blocks per sequence trained in one pass against the full context.

    anchors [b, N] int64 (context row j sits at position j). Returns
    [b, 1, N*B, S + N*B] bool: context strictly before each block's anchor, nothing across blocks.
    """
    b, n = anchors.shape
    dev = anchors.device
    offs = torch.arange(block_size, device=dev)
    q_pos = (anchors[:, :, None] + offs).reshape(b, n * block_size)        # [b, N*B]
    q_anchor = anchors[:, :, None].expand(b, n, block_size).reshape(b, n * block_size)
    q_block = torch.arange(n, device=dev)[:, None].expand(n, block_size).reshape(1, -1)
    ctx_pos = torch.arange(seq_len, device=dev)[None, :].expand(b, seq_len)
    ctx_valid = torch.ones(b, seq_len, dtype=torch.bool, device=dev)
    return dflash_mask(q_pos, q_anchor, q_block.expand(b, -1), ctx_pos, ctx_valid,
                       causal=causal, window=window)
