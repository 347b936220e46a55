"""Attention of new query tokens over a paged KV pool (prefill-extend, decode and verify).

Layout (one layer):
  k_pool, v_pool : [num_blocks, block_size, n_kv_heads, head_dim]
  block_tables   : [batch, max_blocks] int32, block ids of each sequence in order (-1 = unused)
  q              : [batch, n_q, n_heads, head_dim] (padded; row b has `q_lens[b]` valid queries)
  kv_lens        : [batch] int32, KV length of each row *including* the new tokens, whose K/V
                   must already be written into the pool
  q_lens         : [batch] int32, valid queries per row; query i sits at position
                   kv_lens[b] - q_lens[b] + i and attends causally to positions <= its own.

`paged_attention` dispatches to the Triton kernel on CUDA and to `reference_paged_attention`
elsewhere (the CPU engine path: a gather of each row's context plus SDPA).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _check(q: torch.Tensor, k_pool: torch.Tensor, v_pool: torch.Tensor,
           block_tables: torch.Tensor, kv_lens: torch.Tensor, q_lens: torch.Tensor) -> None:
    if q.dim() != 4:
        raise ValueError(f"q: expected [batch, n_q, n_heads, head_dim], got shape {tuple(q.shape)}")
    if k_pool.dim() != 4 or k_pool.shape != v_pool.shape:
        raise ValueError(
            "k_pool/v_pool: expected equal shapes [num_blocks, block_size, n_kv_heads, head_dim], "
            f"got {tuple(k_pool.shape)} and {tuple(v_pool.shape)}")
    if q.shape[3] != k_pool.shape[3] or q.shape[2] % k_pool.shape[2] != 0:
        raise ValueError(
            f"q heads/dim {tuple(q.shape[2:])} incompatible with pool heads/dim {tuple(k_pool.shape[2:])}")
    b = q.shape[0]
    if block_tables.dim() != 2 or block_tables.shape[0] != b:
        raise ValueError(f"block_tables: expected [{b}, max_blocks], got {tuple(block_tables.shape)}")
    if kv_lens.shape != (b,) or q_lens.shape != (b,):
        raise ValueError(f"kv_lens/q_lens: expected shape ({b},), got {tuple(kv_lens.shape)}, {tuple(q_lens.shape)}")


def reference_paged_attention(q: torch.Tensor, k_pool: torch.Tensor, v_pool: torch.Tensor,
                              block_tables: torch.Tensor, kv_lens: torch.Tensor,
                              q_lens: torch.Tensor, scale: float,
                              kv_lens_host: list[int] | None = None) -> torch.Tensor:
    """Torch reference: gather each row's KV to a padded [batch, max_kv] view, one masked SDPA.

    `kv_lens_host` (optional) lets the caller pass lengths it already has on the host, so this
    function makes no device->host sync.
    """
    _check(q, k_pool, v_pool, block_tables, kv_lens, q_lens)
    bsz, n_q, n_heads, head_dim = q.shape
    block_size, n_kv = k_pool.shape[1], k_pool.shape[2]
    max_kv = max(kv_lens_host) if kv_lens_host is not None else int(kv_lens.max())
    n_blk = (max_kv + block_size - 1) // block_size
    tables = block_tables[:, :n_blk].clamp(min=0).long()  # [b, n_blk]
    k = k_pool[tables].reshape(bsz, n_blk * block_size, n_kv, head_dim)[:, :max_kv]
    v = v_pool[tables].reshape(bsz, n_blk * block_size, n_kv, head_dim)[:, :max_kv]
    # Position of each query and visibility mask: kv_pos <= q_pos and kv_pos < kv_len.
    q_pos = (kv_lens - q_lens).unsqueeze(1) + torch.arange(n_q, device=q.device)  # [b, n_q]
    kv_pos = torch.arange(max_kv, device=q.device)  # [max_kv]
    mask = kv_pos.view(1, 1, -1) <= q_pos.unsqueeze(-1)  # [b, n_q, max_kv]
    mask = mask & (kv_pos.view(1, 1, -1) < kv_lens.view(-1, 1, 1))
    out = F.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
        attn_mask=mask.unsqueeze(1), scale=scale, enable_gqa=n_heads != n_kv)
    return out.transpose(1, 2)  # [b, n_q, n_heads, head_dim]


def paged_attention(q: torch.Tensor, k_pool: torch.Tensor, v_pool: torch.Tensor,
                    block_tables: torch.Tensor, kv_lens: torch.Tensor, q_lens: torch.Tensor,
                    scale: float, kv_lens_host: list[int] | None = None) -> torch.Tensor:
    """Dispatch: Triton on CUDA (when available), the torch reference elsewhere."""
    return reference_paged_attention(q, k_pool, v_pool, block_tables, kv_lens, q_lens, scale,
                                     kv_lens_host)
