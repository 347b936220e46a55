"""The DFlash drafter (docs/dflash.md §1, §4; z-lab `DFlashDraftModel`).

Qwen3-style layers (pre-RMSNorm, GQA attention with per-head q_norm/k_norm, RoPE, SwiGLU) at
the target's hidden size. Target features enter as extra keys/values in every layer:
`ctx = hidden_norm(fc(taps))`, then each layer's own k_proj/v_proj + k_norm + RoPE at the
context's absolute positions. The context is not normed by the layer's input_layernorm
(z-lab `Qwen3DFlashAttention` projects `target_hidden` directly). The target's embedding and LM
head are frozen and not part of this module; parameter names equal the z-lab safetensors keys.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from turnspec.engine.drafter.config import DFlashConfig
from turnspec.engine.drafter.masks import inference_mask, training_mask


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x32.to(x.dtype)


def rope_cos_sin(positions: Tensor, head_dim: int, theta: float,
                 dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """positions [...] int64 -> cos, sin [..., head_dim] (computed in fp32, cast to dtype)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=positions.device,
                                             dtype=torch.int64).float() / head_dim))
    freqs = positions.float()[..., None] * inv_freq                       # [..., hd/2]
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """x [..., T, heads, hd]; cos/sin [..., T, hd]. Llama/Qwen rotate-half."""
    cos, sin = cos[..., None, :], sin[..., None, :]
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def _sdpa(q: Tensor, k: Tensor, v: Tensor, mask: Tensor, scale: float) -> Tensor:
    """q [b, nh, Q, hd], k/v [b, nkv, K, hd], mask [b, 1, Q, K] bool -> [b, nh, Q, hd].

    On CUDA the KV heads are expanded instead of enable_gqa: the memory-efficient kernel (the
    one that takes an arbitrary mask) does not take enable_gqa, which would fall back to the
    math kernel. The two are the same arithmetic.
    """
    if q.is_cuda and k.shape[1] != q.shape[1]:
        rep = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale,
                                          enable_gqa=k.shape[1] != q.shape[1])


class DFlashAttention(nn.Module):
    def __init__(self, cfg: DFlashConfig) -> None:
        super().__init__()
        h, nh, nkv, hd = cfg.hidden_size, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
        self.nh, self.nkv, self.hd = nh, nkv, hd
        self.q_proj = nn.Linear(h, nh * hd, bias=False)
        self.k_proj = nn.Linear(h, nkv * hd, bias=False)
        self.v_proj = nn.Linear(h, nkv * hd, bias=False)
        self.o_proj = nn.Linear(nh * hd, h, bias=False)
        self.q_norm = RMSNorm(hd, cfg.rms_norm_eps)
        self.k_norm = RMSNorm(hd, cfg.rms_norm_eps)

    def kv(self, x: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor]:
        """x [..., T, H] -> k [..., T, nkv, hd] (k_norm + RoPE), v [..., T, nkv, hd]."""
        k = self.k_norm(self.k_proj(x).unflatten(-1, (self.nkv, self.hd)))
        return apply_rope(k, cos, sin), self.v_proj(x).unflatten(-1, (self.nkv, self.hd))

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor, ctx_k: Tensor, ctx_v: Tensor,
                mask: Tensor) -> Tensor:
        """x [b, Q, H] (normed block), cos/sin [b, Q, hd], ctx_k/ctx_v [b, L, nkv, hd],
        mask [b, 1, Q, L+Q] -> [b, Q, H]."""
        q = apply_rope(self.q_norm(self.q_proj(x).unflatten(-1, (self.nh, self.hd))), cos, sin)
        k_blk, v_blk = self.kv(x, cos, sin)
        k = torch.cat([ctx_k, k_blk], dim=1).transpose(1, 2)              # [b, nkv, L+Q, hd]
        v = torch.cat([ctx_v, v_blk], dim=1).transpose(1, 2)
        out = _sdpa(q.transpose(1, 2), k, v, mask, self.hd ** -0.5)       # [b, nh, Q, hd]
        return self.o_proj(out.transpose(1, 2).flatten(-2))


class DFlashMLP(nn.Module):
    def __init__(self, cfg: DFlashConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DFlashLayer(nn.Module):
    def __init__(self, cfg: DFlashConfig, layer_type: str) -> None:
        super().__init__()
        self.causal = layer_type == "sliding_attention"
        self.window = cfg.sliding_window if self.causal else None
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = DFlashAttention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = DFlashMLP(cfg)

    def forward(self, h: Tensor, cos: Tensor, sin: Tensor, ctx_k: Tensor, ctx_v: Tensor,
                mask: Tensor) -> Tensor:
        h = h + self.self_attn(self.input_layernorm(h), cos, sin, ctx_k, ctx_v, mask)
        return h + self.mlp(self.post_attention_layernorm(h))


class DFlashDrafter(nn.Module):
    """Block drafter: `[anchor, MASK x (B-1)]` in, final-normed hidden states out."""

    def __init__(self, config: DFlashConfig) -> None:
        super().__init__()
        self.config = config
        self.layers = nn.ModuleList(DFlashLayer(config, t) for t in config.layer_types)
        self.fc = nn.Linear(config.num_taps * config.hidden_size, config.hidden_size, bias=False)
        self.hidden_norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.reset_parameters()

    def reset_parameters(self, std: float = 0.02) -> None:
        """Qwen3PreTrainedModel init: N(0, 0.02) linears, unit norms."""
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=std)
            elif isinstance(m, RMSNorm):
                nn.init.ones_(m.weight)

    @property
    def dtype(self) -> torch.dtype:
        """The drafter's compute dtype (read off a norm: the engine may swap its linears for
        prepacked ones that keep no plain weight)."""
        return self.hidden_norm.weight.dtype

    def project_context(self, taps: Tensor) -> Tensor:
        """taps [..., T, K*H] (target layer outputs, target_layer_ids order) -> [..., T, H]."""
        return self.hidden_norm(self.fc(taps))

    def context_kv(self, ctx: Tensor, positions: Tensor) -> list[tuple[Tensor, Tensor]]:
        """ctx [..., T, H], positions [..., T] int64 -> per layer (k, v), each [..., T, nkv, hd]
        (k after k_norm and RoPE at the absolute positions). The engine caches these."""
        cos, sin = rope_cos_sin(positions, self.config.head_dim, self.config.rope_theta,
                                ctx.dtype)
        return [layer.self_attn.kv(ctx, cos, sin) for layer in self.layers]

    def forward_block(self, block_embeds: Tensor, block_positions: Tensor, ctx_k: list[Tensor],
                      ctx_v: list[Tensor], ctx_lens: Tensor) -> Tensor:
        """One block per row.

        block_embeds [b, B, H] target embedding of [anchor, MASK...]; block_positions [b, B]
        int64 (p..p+B-1); ctx_k/ctx_v per layer [b, L, nkv, hd], row b valid for index
        < ctx_lens[b] [b] int64, all strictly before the anchor. Returns final-normed [b, B, H];
        slot k predicts the token at position p+k (apply the target LM head to [:, 1:]).
        """
        if len(ctx_k) != len(self.layers) or len(ctx_v) != len(self.layers):
            raise ValueError(f"ctx_k/ctx_v: expected {len(self.layers)} layers, got "
                             f"{len(ctx_k)}/{len(ctx_v)}")
        ctx_len_max = ctx_k[0].shape[1]
        masks = {(layer.causal, layer.window): None for layer in self.layers}
        for causal, window in masks:
            masks[(causal, window)] = inference_mask(block_positions, ctx_lens, ctx_len_max,
                                                     causal=causal, window=window)
        return self._run(block_embeds, block_positions, ctx_k, ctx_v, masks)

    def forward_train(self, taps: Tensor, block_embeds: Tensor, anchors: Tensor) -> Tensor:
        """N blocks per sequence against the full context, one pass.

        taps [b, S, K*H] target features of the whole sequence (row j at position j);
        block_embeds [b, N, B, H] embeddings of [x_anchor, MASK...]; anchors [b, N] int64.
        Returns final-normed [b, N, B, H]; slot k predicts x[anchor + k] (same position).
        """
        b, s = taps.shape[:2]
        n, blk = block_embeds.shape[1:3]
        ctx = self.project_context(taps)                                   # [b, S, H]
        kv = self.context_kv(ctx, torch.arange(s, device=taps.device).expand(b, s))
        q_pos = (anchors[:, :, None] + torch.arange(blk, device=taps.device)).flatten(1)
        masks = {(layer.causal, layer.window): None for layer in self.layers}
        for causal, window in masks:
            masks[(causal, window)] = training_mask(anchors, s, blk, causal=causal,
                                                    window=window)
        h = self._run(block_embeds.flatten(1, 2), q_pos, [k for k, _ in kv], [v for _, v in kv],
                      masks)
        return h.unflatten(1, (n, blk))

    def _run(self, h: Tensor, q_pos: Tensor, ctx_k: list[Tensor], ctx_v: list[Tensor],
             masks: dict[tuple[bool, int | None], Tensor]) -> Tensor:
        """h [b, Q, H], q_pos [b, Q] -> final-normed [b, Q, H]."""
        cos, sin = rope_cos_sin(q_pos, self.config.head_dim, self.config.rope_theta, h.dtype)
        for layer, k, v in zip(self.layers, ctx_k, ctx_v, strict=True):
            h = layer(h, cos, sin, k, v, masks[(layer.causal, layer.window)])
        return self.norm(h)
