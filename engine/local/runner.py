"""ModelRunner: turns scheduled sequences into padded tensors and runs the target (and the
DFlash drafter). It owns the KV pools, the rotary table and the drafter context rows.

Pools: target K/V `[layers, blocks, block_size, kv_heads, head_dim]`; with a drafter, its
context K/V live in pools of the same block geometry, so a block holds both the target's
KV and the drafter's context rows for the same positions — the prefix cache reuses both.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from turnspec.engine.local.config import LocalEngineConfig
from turnspec.engine.local.sequence import Sequence
from turnspec.engine.model.attention import AttentionBatch
from turnspec.engine.model.cpu_linear import Bf16DraftHead
from turnspec.engine.model.rope import RotaryTable
from turnspec.engine.model.transformer import Transformer


@dataclass(slots=True)
class ExtendOutput:
    hidden: torch.Tensor  # [b, n, H] final-normed hidden of the new tokens
    taps: torch.Tensor | None  # [b, n, K*H] target layer outputs for the drafter


def kv_blocks(cfg: LocalEngineConfig, model, drafter, block_size: int, max_context: int,
               lookahead: int) -> int:
    """KV blocks that fit kv_memory_gb: the target's K/V in its dtype plus, with a drafter,
    its context K/V in the drafter's dtype (bf16 on some CPUs: spec_build.prepare_drafter); a ValueError if one
    max-context sequence does not fit."""
    mc = model.cfg
    per_token = 2 * mc.num_layers * mc.num_kv_heads * mc.head_dim \
        * torch.empty((), dtype=cfg.torch_dtype).element_size()
    if drafter is not None:
        dc = drafter.config
        per_token += 2 * dc.num_layers * dc.num_kv_heads * dc.head_dim \
            * torch.empty((), dtype=drafter.dtype).element_size()  # the runner's context pools' dtype
    per_block = per_token * block_size
    gb = cfg.kv_memory_gb or (1.0 if cfg.device == "cpu" else 16.0)
    blocks = int(gb * 2**30 // per_block)
    need = (max_context + lookahead + block_size - 1) // block_size
    if blocks < need:
        raise ValueError(f"kv_memory_gb={gb} holds {blocks} blocks; one max-context sequence "
                         f"needs {need}: raise kv_memory_gb or lower max_context")
    return blocks


class ModelRunner:
    def __init__(self, model: Transformer, num_blocks: int, block_size: int, max_positions: int,
                 device: torch.device, dtype: torch.dtype, drafter=None, context_kv=None) -> None:
        cfg = model.cfg
        self.model, self.cfg = model, cfg
        self.device, self.dtype = device, dtype
        self.block_size = block_size
        shape = (cfg.num_layers, num_blocks, block_size, cfg.num_kv_heads, cfg.head_dim)
        self.k_pools = torch.zeros(shape, device=device, dtype=dtype)
        self.v_pools = torch.zeros(shape, device=device, dtype=dtype)
        self.rope = RotaryTable(cfg.rope, cfg.head_dim, max_positions, device, dtype)
        self.drafter = drafter
        # new context rows' K/V for every drafter layer: FusedContextKV (one GEMM) when given
        self.context_kv = context_kv if context_kv is not None else \
            (drafter.context_kv if drafter is not None else None)
        self.tap_layers: tuple[int, ...] = ()
        if drafter is not None:
            dc = drafter.config
            self.tap_layers = tuple(dc.target_layer_ids)
            dshape = (dc.num_layers, num_blocks, block_size, dc.num_kv_heads, dc.head_dim)
            self.draft_dtype = drafter.dtype  # bf16 on a CPU with native bf16 (core.py)
            self.dk_pools = torch.zeros(dshape, device=device, dtype=self.draft_dtype)
            self.dv_pools = torch.zeros(dshape, device=device, dtype=self.draft_dtype)
            self.mask_token_id = dc.mask_token_id
        # A bf16 drafter beside an fp32 CPU target (core.py decides: CPUs with bf16 dot
        # products) also takes its LM head in bf16; drafts are proposals, verified in fp32.
        self.draft_head = None
        if drafter is not None and device.type == "cpu" and dtype == torch.float32 \
                and self.draft_dtype == torch.bfloat16:
            self.draft_head = Bf16DraftHead(model.lm_head.weight)
        self.forward_seconds = 0.0  # model time, for the host-overhead split

    # -- target ----------------------------------------------------------------------------
    @torch.inference_mode()
    def extend(self, rows: list[tuple[Sequence, list[int]]]) -> ExtendOutput:
        """Run new tokens for each sequence at positions num_computed.. (KV written)."""
        t0 = time.perf_counter()
        n = max(len(toks) for _, toks in rows)
        ids = torch.zeros(len(rows), n, dtype=torch.int64)
        pos = torch.zeros(len(rows), n, dtype=torch.int64)
        for r, (seq, toks) in enumerate(rows):
            ids[r, : len(toks)] = torch.tensor(toks)
            pos[r, : len(toks)] = torch.arange(seq.num_computed, seq.num_computed + len(toks))
        batch = AttentionBatch.build(
            [s.block_table for s, _ in rows], [s.num_computed + len(t) for s, t in rows],
            [len(t) for _, t in rows], self.block_size, self.device)
        ids, pos = ids.to(self.device), pos.to(self.device)
        cos, sin = self.rope.lookup(pos)
        hidden, taps = self.model(ids, cos, sin, self.k_pools, self.v_pools, batch, self.tap_layers)
        self.forward_seconds += time.perf_counter() - t0
        return ExtendOutput(hidden, taps)

    @torch.inference_mode()
    def copy_kv_blocks(self, src: list[int], dst: list[int]) -> None:
        """Target K/V of blocks `src` into blocks `dst`, every layer, in one indexed copy per
        pool (the shadow rows' copies of their anchors' blocks: shadow_kv.py)."""
        s = torch.tensor(src, device=self.device)
        d = torch.tensor(dst, device=self.device)
        self.k_pools[:, d] = self.k_pools[:, s]
        self.v_pools[:, d] = self.v_pools[:, s]

    @torch.inference_mode()
    def copy_kv_slots(self, src: list[int], dst: list[int]) -> None:
        """Target K/V of slots `src` (block * block_size + offset) into slots `dst`, every layer."""
        s = torch.tensor(src, device=self.device)
        d = torch.tensor(dst, device=self.device)
        for pools in (self.k_pools, self.v_pools):
            flat = pools.view(pools.shape[0], -1, *pools.shape[3:])
            flat[:, d] = flat[:, s]

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        t0 = time.perf_counter()
        out = self.model.logits(hidden)
        self.forward_seconds += time.perf_counter() - t0
        return out

    # -- drafter ---------------------------------------------------------------------------
    def slots(self, seq: Sequence, start: int, count: int) -> list[int]:
        """KV slots (block * block_size + offset) of `count` positions from `start` in `seq`'s
        block table (a sequence, or a shadow row: shadow_kv.py)."""
        bs = self.block_size
        return [seq.block_table[p // bs] * bs + p % bs for p in range(start, start + count)]

    @torch.inference_mode()
    def store_context(self, items: list[tuple[Sequence, int, int, int]], taps: torch.Tensor) -> None:
        """Append drafter context rows: items are (seq, batch row, first position, count);
        taps [b, n, K*H] from the same forward pass that computed the target KV."""
        if self.drafter is None or not items:
            return
        t0 = time.perf_counter()
        rows, cols, slots, positions = [], [], [], []
        for seq, r, start, count in items:
            rows += [r] * count
            cols += list(range(count))
            slots += self.slots(seq, start, count)
            positions += list(range(start, start + count))
        dev = self.device
        sel = taps[torch.tensor(rows, device=dev), torch.tensor(cols, device=dev)]  # [T, K*H]
        ctx = self.drafter.project_context(sel.to(self.draft_dtype))
        kv = self.context_kv(ctx, torch.tensor(positions, device=dev))
        slot_t = torch.tensor(slots, device=dev)
        dc = self.drafter.config
        for layer, (k, v) in enumerate(kv):
            self.dk_pools[layer].view(-1, dc.num_kv_heads, dc.head_dim).index_copy_(0, slot_t, k)
            self.dv_pools[layer].view(-1, dc.num_kv_heads, dc.head_dim).index_copy_(0, slot_t, v)
        self.forward_seconds += time.perf_counter() - t0

    @torch.inference_mode()
    def draft(self, seqs: list[Sequence], block: int) -> torch.Tensor:
        """One drafter pass: block [anchor, MASK x (block-1)] at positions p..p+block-1 over the
        context rows [0, p). Returns the drafter's logits [b, block-1, V] over the target's
        vocabulary (engine/spec/proposers/drafter.py reads its proposal from them)."""
        t0 = time.perf_counter()
        b = len(seqs)
        anchors = torch.tensor([s.token_ids[-1] for s in seqs], dtype=torch.int64)
        ids = torch.full((b, block), self.mask_token_id, dtype=torch.int64)
        ids[:, 0] = anchors
        starts = torch.tensor([s.num_computed for s in seqs], dtype=torch.int64)
        pos = starts.unsqueeze(1) + torch.arange(block)
        ctx_len = max(s.num_computed for s in seqs)
        bs = self.block_size
        n_blk = (ctx_len + bs - 1) // bs
        table = torch.zeros(b, n_blk, dtype=torch.int64)
        for r, s in enumerate(seqs):
            nb = (s.num_computed + bs - 1) // bs
            table[r, :nb] = torch.tensor(s.block_table[:nb])
        gather = (table.unsqueeze(-1) * bs + torch.arange(bs)).view(b, -1)[:, :ctx_len].to(self.device)
        dc = self.drafter.config
        ctx_k = [p.view(-1, dc.num_kv_heads, dc.head_dim)[gather] for p in self.dk_pools]
        ctx_v = [p.view(-1, dc.num_kv_heads, dc.head_dim)[gather] for p in self.dv_pools]
        embeds = self.model.embed_tokens(ids.to(self.device)).to(self.draft_dtype)
        hidden = self.drafter.forward_block(embeds, pos.to(self.device), ctx_k, ctx_v,
                                            starts.to(self.device))
        head = self.draft_head if self.draft_head is not None else self.model.logits
        logits = head(hidden[:, 1:])  # [b, block-1, V]
        self.forward_seconds += time.perf_counter() - t0
        return logits
