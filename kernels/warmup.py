"""Compile, before the first request, every Triton variant a server will meet.

A variant compiles on first use (about a second on the H200), so without this the first
request at each new shape stalls mid-stream. What selects a variant (kernels/paged_attention.py):
the query tile (BLOCK_M, BLOCK_Q: at most three shapes, from `query_tiling`), split or not, and
for a split the combine's power-of-two pad; the dtype and head layout are fixed per model. The
accept kernel has one variant per draft length. Tiny calls cover them all; the pools' inner
strides equal the engine's (same page, heads and head_dim), so the specialisations match.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from turnspec.kernels.dflash_accept import triton_dflash_accept
from turnspec.kernels.paged_attention import query_tiling, triton_paged_attention

MAX_SPLITS = 64  # default_num_splits never exceeds it


def warm_up(n_heads: int, n_kv: int, head_dim: int, page: int, dtype: torch.dtype,
            device: torch.device | str, q_sizes: Iterable[int] = range(1, 65),
            draft_lengths: Iterable[int] = ()) -> int:
    """Run each variant once on tiny inputs; returns the number of kernel calls made.

    q_sizes: query counts to cover (default: 1..64, i.e. every tile shape: larger counts share
    the 64-row tile), deduplicated by tile shape. draft_lengths: B-1 for each block size served."""
    if n_heads % n_kv:
        raise ValueError(f"n_heads={n_heads} is not a multiple of n_kv={n_kv}")
    tilings = {query_tiling(n, n_heads // n_kv): n for n in sorted(set(q_sizes)) if n >= 1}
    pads = [1 << i for i in range(1, MAX_SPLITS.bit_length())]  # the combine's 2, 4, .., 64
    smallest = min(tilings.values())
    calls = 0
    for n_q in tilings.values():  # split or not per tile; the combine pads once
        for splits in ([1, *pads] if n_q == smallest else [1, 2]):
            _attend(n_q, splits, n_heads, n_kv, head_dim, page, dtype, device)
            calls += 1
    for n in sorted(set(draft_lengths)):
        drafts = torch.zeros(1, n, dtype=torch.int64, device=device)
        triton_dflash_accept(drafts, torch.zeros(1, n + 1, dtype=torch.int64, device=device))
        calls += 1
    return calls


def _attend(n_q: int, splits: int, n_heads: int, n_kv: int, head_dim: int, page: int,
            dtype: torch.dtype, device: torch.device | str) -> None:
    kv_len = n_q + page
    blocks = -(-kv_len // page)
    q = torch.zeros(1, n_q, n_heads, head_dim, dtype=dtype, device=device)
    pool = torch.zeros(blocks, page, n_kv, head_dim, dtype=dtype, device=device)
    table = torch.arange(blocks, dtype=torch.int32, device=device).unsqueeze(0)
    lens = lambda v: torch.tensor([v], dtype=torch.int32, device=device)  # noqa: E731
    triton_paged_attention(q, pool, pool, table, lens(kv_len), lens(n_q), 1.0,
                           kv_lens_host=[kv_len], num_splits=splits)
