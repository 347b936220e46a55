"""The drafter's context K/V for newly committed tokens: every layer in one GEMM.

Each committed token adds one context row per drafter layer: k = RoPE(k_norm(k_proj(ctx))),
v = v_proj(ctx) (`DFlashDrafter.context_kv`, engine/drafter/model.py). Layer by layer that is 8
small GEMMs, 4 norms and 4 RoPE passes per step for a handful of rows, in every step, spec or
paused. Here the k/v weights of all layers are stacked into one matrix, so a step runs one GEMM,
one norm and one RoPE over all layers. Dev AMD EPYC, one process, 12 held-out tool turns at
B=8: `store_context` 2.04 -> 1.69 ms a call (docs/history/notes/cpu-draft-path.md).

Same arithmetic per element as the layer-by-layer path (a GEMM's accumulation order may differ
in the last bit); context rows only shape drafts, which the target verifies, so output is
unchanged either way (tests/engine/local/test_draft_context.py compares the two).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from turnspec.engine.drafter.model import DFlashAttention, DFlashDrafter, apply_rope, rope_cos_sin
from turnspec.engine.model.cpu_linear import bf16_linear, bf16_prepacked, cpu_has_native_bf16


class FusedContextKV(nn.Module):
    """Built from a drafter whose linears are still plain nn.Linear (before the engine
    prepacks them); the drafter's own weights are left as they are."""

    def __init__(self, drafter: DFlashDrafter) -> None:
        super().__init__()
        cfg = drafter.config
        self.num_layers, self.nkv, self.hd = cfg.num_layers, cfg.num_kv_heads, cfg.head_dim
        self.theta = cfg.rope_theta
        if not self.fusable(drafter):
            raise ValueError("FusedContextKV: expected bias-free nn.Linear k_proj/v_proj (build it "
                             "before the engine prepacks the drafter's linears)")
        attns = [layer.self_attn for layer in drafter.layers]
        # rows: layer 0 k, layer 0 v, layer 1 k, ... -> output [T, L, 2, nkv, hd]
        weight = torch.cat([w for a in attns for w in (a.k_proj.weight, a.v_proj.weight)]).detach()
        self.eps = attns[0].k_norm.eps
        self.register_buffer("k_norm", torch.stack([a.k_norm.weight.detach() for a in attns]),
                             persistent=False)  # [L, hd]
        self.packed = None
        if weight.device.type == "cpu" and weight.dtype == torch.bfloat16 and cpu_has_native_bf16():
            self.packed = bf16_prepacked(weight, 8)
            weight = None
        self.weight = weight

    @staticmethod
    def fusable(drafter: DFlashDrafter) -> bool:
        """True while every layer is a DFlashAttention with plain bias-free k/v nn.Linear (a
        drafter object an earlier engine already prepacked keeps the layer-by-layer path)."""
        return all(isinstance(layer.self_attn, DFlashAttention)
                   and all(type(p) is nn.Linear and p.bias is None
                           for p in (layer.self_attn.k_proj, layer.self_attn.v_proj))
                   for layer in drafter.layers)

    def forward(self, ctx: Tensor, positions: Tensor) -> list[tuple[Tensor, Tensor]]:
        """ctx [T, H], positions [T] int64 -> per layer (k, v), each [T, nkv, hd] (k after
        k_norm and RoPE at the absolute positions), as `DFlashDrafter.context_kv`."""
        t = ctx.shape[0]
        if self.packed is not None:
            kv = bf16_linear(ctx, self.packed, None)
        else:
            kv = torch.nn.functional.linear(ctx, self.weight)
        kv = kv.view(t, self.num_layers, 2, self.nkv, self.hd)
        k, v = kv[:, :, 0], kv[:, :, 1]                                     # [T, L, nkv, hd]
        k32 = k.float()
        k32 = k32 * torch.rsqrt(k32.pow(2).mean(-1, keepdim=True) + self.eps)
        k = self.k_norm[None, :, None, :] * k32.to(ctx.dtype)
        cos, sin = rope_cos_sin(positions, self.hd, self.theta, ctx.dtype)  # [T, hd]
        k = apply_rope(k, cos[:, None, :], sin[:, None, :])
        return [(k[:, i], v[:, i]) for i in range(self.num_layers)]
