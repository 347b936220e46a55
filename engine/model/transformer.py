"""A compact decoder for the Llama / Qwen2 / Qwen3 families (gpt-fast / nano-vllm style).

Every forward pass takes a padded batch of *new* tokens `[b, n]`, writes their K/V into the
paged pool and attends over each row's full context through `AttentionBatch`. q/k/v and
gate/up projections are fused into one matmul each (fewer launches, fewer Python ops).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from turnspec.engine.model.attention import AttentionBatch
from turnspec.engine.model.config import ModelConfig
from turnspec.engine.model.rope import apply_rope


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.qkv_proj = nn.Linear(cfg.hidden_size, cfg.q_size + 2 * cfg.kv_size, bias=cfg.qkv_bias)
        self.o_proj = nn.Linear(cfg.q_size, cfg.hidden_size, bias=False)
        if cfg.qk_norm:
            self.q_norm = nn.RMSNorm(cfg.head_dim, eps=cfg.rms_norm_eps)
            self.k_norm = nn.RMSNorm(cfg.head_dim, eps=cfg.rms_norm_eps)
        self.scale = cfg.head_dim ** -0.5

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                k_pool: torch.Tensor, v_pool: torch.Tensor, batch: AttentionBatch) -> torch.Tensor:
        cfg = self.cfg
        b, n, _ = x.shape
        qkv = self.qkv_proj(x)  # [b, n, q + 2kv]
        q, k, v = qkv.split([cfg.q_size, cfg.kv_size, cfg.kv_size], dim=-1)
        q = q.view(b, n, cfg.num_heads, cfg.head_dim)
        k = k.view(b, n, cfg.num_kv_heads, cfg.head_dim)
        v = v.view(b, n, cfg.num_kv_heads, cfg.head_dim)
        if cfg.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        batch.store_kv(k_pool, v_pool, k, v)
        out = batch.attend(q, k_pool, v_pool, self.scale)  # [b, n, heads, head_dim]
        return self.o_proj(out.reshape(b, n, cfg.q_size))


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.inter = cfg.intermediate_size
        self.gate_up_proj = nn.Linear(cfg.hidden_size, 2 * cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up_proj(x).split(self.inter, dim=-1)
        return self.down_proj(F.silu(gate) * up)


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.input_layernorm = nn.RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = nn.RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                k_pool: torch.Tensor, v_pool: torch.Tensor, batch: AttentionBatch) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, k_pool, v_pool, batch)
        return x + self.mlp(self.post_attention_layernorm(x))


class Transformer(nn.Module):
    """Decoder-only LM. `forward` returns final hidden states and the requested layer taps."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.num_layers))
        self.norm = nn.RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.embed_tokens.weight

    def forward(self, input_ids: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                k_pools: torch.Tensor, v_pools: torch.Tensor, batch: AttentionBatch,
                tap_layers: tuple[int, ...] = ()) -> tuple[torch.Tensor, torch.Tensor | None]:
        """input_ids [b, n] int64; cos/sin [b, n, head_dim]; pools [layers, blocks, bs, kv, hd].

        Returns (hidden [b, n, H] after the final norm, taps [b, n, len(tap_layers) * H] or None),
        where tap i is the *output* of layer tap_layers[i] (HF hidden_states[id + 1]).
        """
        x = self.embed_tokens(input_ids)
        taps: dict[int, torch.Tensor] = {}
        for i, layer in enumerate(self.layers):
            x = layer(x, cos, sin, k_pools[i], v_pools[i], batch)
            if i in tap_layers:
                taps[i] = x
        tapped = torch.cat([taps[i] for i in tap_layers], dim=-1) if tap_layers else None
        return self.norm(x), tapped

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """[..., H] -> [..., V] in fp32 (sampling and verification compare in fp32)."""
        return self.lm_head(hidden).float()
