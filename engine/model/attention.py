"""Per-step attention metadata over the paged KV pool, built once and shared by every layer.

On CUDA, `attend` calls the Triton paged-attention kernel (`turnspec.kernels.paged_attention`).
On CPU it gathers each row's context through a precomputed index and runs one masked SDPA —
the same math as `reference_paged_attention`, with the index and mask built once per step
instead of once per layer (30 layers on SmolLM2). A single row whose blocks are consecutive
ids (the block manager prefers that) is read in place: a slice of the pool, no gather (which
copies ~50 MB a decode step at a 1.1k-token context; in place, plain CPU decode is 3-4% faster).
A single decoding row on a few runs of consecutive blocks (a turn whose prefix came from the
prefix cache: the cached blocks, then its own) is read in place too, run by run, with the
softmax over all runs' scores at once: inside the model on the dev CPU (multi-turn tool turns,
~1k-token contexts) 356 against 457 us a layer for the gather + SDPA it replaces (in place on
one run: 242). Verify steps (more queries) still gather: alone, the two were level there.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from turnspec.kernels.paged_attention import paged_attention, visibility_mask


@dataclass(slots=True)
class AttentionBatch:
    """Where a step's new tokens go and what they see.

    Invariants: row r has q_lens[r] valid new tokens at positions kv_lens[r] - q_lens[r] ..
    kv_lens[r] - 1; `slots` lists the flat pool slot of every valid new token in row-major
    order of `valid` (indices into the flattened [b * n] token grid).
    """

    block_size: int
    slots: torch.Tensor  # [num_valid] int64 flat pool slots
    valid: torch.Tensor | None  # [num_valid] int64 indices into b*n, None when all are valid
    block_tables: torch.Tensor  # [b, max_blocks] int32
    kv_lens: torch.Tensor  # [b] int32
    q_lens: torch.Tensor  # [b] int32
    kv_lens_host: list[int]
    use_kernel: bool
    gather: torch.Tensor | None = None  # CPU path: [b, max_kv] int64 flat slots
    span: int | None = None  # CPU path, one row on consecutive blocks: its first flat slot
    mask: torch.Tensor | None = None  # CPU path: [b, 1, n, max_kv] bool, None = no masking needed
    causal_only: bool = False  # CPU path: single row starting at position 0 -> is_causal SDPA
    runs: list[tuple[int, int]] | None = None  # CPU path, one decoding row: (first, end) slots

    @classmethod
    def build(cls, block_tables: list[list[int]], kv_lens: list[int], q_lens: list[int],
              block_size: int, device: torch.device, use_kernel: bool | None = None
              ) -> AttentionBatch:
        b, n = len(kv_lens), max(q_lens)
        max_blocks = max(len(t) for t in block_tables)
        table = torch.full((b, max_blocks), -1, dtype=torch.int32)
        for r, t in enumerate(block_tables):
            table[r, : len(t)] = torch.tensor(t, dtype=torch.int32)
        kv = torch.tensor(kv_lens, dtype=torch.int32)
        ql = torch.tensor(q_lens, dtype=torch.int32)
        # Flat slot of every new token: position -> block_tables[pos // bs] * bs + pos % bs.
        slots, valid = [], []
        for r in range(b):
            start = kv_lens[r] - q_lens[r]
            for i in range(q_lens[r]):
                pos = start + i
                slots.append(block_tables[r][pos // block_size] * block_size + pos % block_size)
                valid.append(r * n + i)
        all_valid = len(valid) == b * n
        if use_kernel is None:
            use_kernel = device.type == "cuda"
        batch = cls(
            block_size=block_size,
            slots=torch.tensor(slots, dtype=torch.int64).to(device, non_blocking=True),
            valid=None if all_valid else torch.tensor(valid, dtype=torch.int64).to(device),
            block_tables=table.to(device, non_blocking=True),
            kv_lens=kv.to(device, non_blocking=True),
            q_lens=ql.to(device, non_blocking=True),
            kv_lens_host=list(kv_lens),
            use_kernel=use_kernel,
        )
        if not use_kernel:
            batch._build_cpu_path(table, kv, ql, n, device)
        return batch

    def _build_cpu_path(self, table: torch.Tensor, kv: torch.Tensor, ql: torch.Tensor, n: int,
                        device: torch.device) -> None:
        b = table.shape[0]
        max_kv = max(self.kv_lens_host)
        n_blk = (max_kv + self.block_size - 1) // self.block_size
        t = table[:, :n_blk].clamp(min=0).long()
        runs = consecutive_runs(t[0].tolist(), self.block_size, max_kv) if b == 1 else []
        if len(runs) == 1:
            self.span = runs[0][0]
        elif b == 1 and n == 1 and len(runs) <= MAX_RUNS:
            self.runs = runs
        else:
            gather = (t.unsqueeze(-1) * self.block_size + torch.arange(self.block_size)).view(b, -1)
            self.gather = gather[:, :max_kv].to(device)
        if b == 1 and n == 1:
            self.mask = None  # one decode query sees its whole context
        elif b == 1 and int(kv[0]) == int(ql[0]):
            self.causal_only = True  # fresh prefill: plain causal attention
        else:
            self.mask = visibility_mask(kv, ql, n, max_kv).unsqueeze(1).to(device)  # [b, 1, n, max_kv]

    def store_kv(self, k_pool: torch.Tensor, v_pool: torch.Tensor, k: torch.Tensor,
                 v: torch.Tensor) -> None:
        """Write new K/V ([b, n, kv_heads, hd]) into the pool ([blocks, bs, kv_heads, hd])."""
        kvh, hd = k_pool.shape[2], k_pool.shape[3]
        kf, vf = k.reshape(-1, kvh, hd), v.reshape(-1, kvh, hd)
        if self.valid is not None:
            kf, vf = kf.index_select(0, self.valid), vf.index_select(0, self.valid)
        k_pool.view(-1, kvh, hd).index_copy_(0, self.slots, kf)
        v_pool.view(-1, kvh, hd).index_copy_(0, self.slots, vf)

    def attend(self, q: torch.Tensor, k_pool: torch.Tensor, v_pool: torch.Tensor,
               scale: float) -> torch.Tensor:
        """q [b, n, heads, hd] -> [b, n, heads, hd]."""
        if self.use_kernel:
            return paged_attention(q, k_pool, v_pool, self.block_tables, self.kv_lens,
                                   self.q_lens, scale, self.kv_lens_host)
        kvh, hd = k_pool.shape[2], k_pool.shape[3]
        if self.runs is not None:
            return _attend_runs(q, k_pool.view(-1, kvh, hd), v_pool.view(-1, kvh, hd), self.runs,
                                scale)
        if self.span is not None:  # [1, kv_len, kvh, hd] views of the pool
            end = self.span + self.kv_lens_host[0]
            k = k_pool.view(-1, kvh, hd)[self.span : end].unsqueeze(0)
            v = v_pool.view(-1, kvh, hd)[self.span : end].unsqueeze(0)
        else:
            k = k_pool.view(-1, kvh, hd)[self.gather]  # [b, max_kv, kvh, hd]
            v = v_pool.view(-1, kvh, hd)[self.gather]
        out = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=self.mask,
            is_causal=self.causal_only, scale=scale, enable_gqa=q.shape[2] != kvh)
        return out.transpose(1, 2)


MAX_RUNS = 8  # more runs than this (a fragmented pool): one gather, as for batches


def consecutive_runs(blocks: list[int], block_size: int, kv_len: int) -> list[tuple[int, int]]:
    """The first `kv_len` tokens of a block list as runs of consecutive blocks: [(first flat
    slot, end flat slot)], in position order."""
    runs: list[tuple[int, int]] = []
    left = kv_len
    for blk in blocks:
        n = min(block_size, left)
        if n <= 0:
            break
        first = blk * block_size
        if runs and runs[-1][1] == first:
            runs[-1] = (runs[-1][0], first + n)
        else:
            runs.append((first, first + n))
        left -= n
    return runs


def _attend_runs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, runs: list[tuple[int, int]],
                 scale: float) -> torch.Tensor:
    """One decoding row: q [1, 1, heads, hd] over K/V [slots, kvh, hd] read in place at `runs`.
    Query heads h * g .. h * g + g - 1 share KV head h (SDPA's enable_gqa grouping)."""
    heads, hd = q.shape[2], q.shape[3]
    kvh = k.shape[1]
    qg = q.reshape(kvh, heads // kvh, hd)
    # [kvh, g, hd] @ [kvh, hd, len]: each run is a strided view, no copy
    scores = torch.cat([torch.matmul(qg, k[a:b].permute(1, 2, 0)) for a, b in runs], dim=-1)
    p = torch.softmax(scores.mul_(scale), dim=-1)
    out, at = None, 0
    for a, b in runs:
        part = torch.matmul(p[..., at : at + b - a], v[a:b].permute(1, 0, 2))  # [kvh, g, hd]
        out = part if out is None else out.add_(part)
        at += b - a
    return out.view(1, 1, heads, hd)
