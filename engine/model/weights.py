"""Load HF safetensors shards into turnspec's Transformer (fusing q/k/v and gate/up)."""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors import safe_open

from turnspec.engine.model.config import ModelConfig
from turnspec.engine.model.transformer import Transformer


def _hf_names(cfg: ModelConfig) -> dict[str, list[str]]:
    """Our parameter name -> the HF tensor names concatenated (in order) along dim 0."""
    m: dict[str, list[str]] = {
        "embed_tokens.weight": ["model.embed_tokens.weight"],
        "norm.weight": ["model.norm.weight"],
    }
    if not cfg.tie_word_embeddings:
        m["lm_head.weight"] = ["lm_head.weight"]
    for i in range(cfg.num_layers):
        p, h = f"layers.{i}.", f"model.layers.{i}."
        m[p + "self_attn.qkv_proj.weight"] = [h + f"self_attn.{x}_proj.weight" for x in "qkv"]
        if cfg.qkv_bias:
            m[p + "self_attn.qkv_proj.bias"] = [h + f"self_attn.{x}_proj.bias" for x in "qkv"]
        m[p + "self_attn.o_proj.weight"] = [h + "self_attn.o_proj.weight"]
        if cfg.qk_norm:
            m[p + "self_attn.q_norm.weight"] = [h + "self_attn.q_norm.weight"]
            m[p + "self_attn.k_norm.weight"] = [h + "self_attn.k_norm.weight"]
        m[p + "mlp.gate_up_proj.weight"] = [h + "mlp.gate_proj.weight", h + "mlp.up_proj.weight"]
        m[p + "mlp.down_proj.weight"] = [h + "mlp.down_proj.weight"]
        m[p + "input_layernorm.weight"] = [h + "input_layernorm.weight"]
        m[p + "post_attention_layernorm.weight"] = [h + "post_attention_layernorm.weight"]
    return m


def load_model(model_dir: str | Path, device: torch.device | str = "cpu",
               dtype: torch.dtype = torch.float32) -> Transformer:
    """Build a Transformer from a local HF folder; every expected tensor must be present."""
    path = Path(model_dir)
    cfg = ModelConfig.from_model_dir(path)
    shards = sorted(path.glob("*.safetensors"))
    if not shards:
        raise FileNotFoundError(f"{str(path)!r} has no *.safetensors weights")
    tensors: dict[str, torch.Tensor] = {}
    for shard in shards:
        with safe_open(str(shard), framework="pt") as f:
            for key in f.keys():  # noqa: SIM118 (safe_open is not a dict)
                tensors[key] = f.get_tensor(key)
    with torch.device("meta"):
        model = Transformer(cfg)
    state: dict[str, torch.Tensor] = {}
    for ours, theirs in _hf_names(cfg).items():
        missing = [t for t in theirs if t not in tensors]
        if missing:
            raise KeyError(f"{str(path)!r}: weights {missing} not found; expected a "
                           f"{cfg.model_type} checkpoint with HF parameter names")
        state[ours] = torch.cat([tensors[t] for t in theirs], dim=0).to(dtype)
    model.load_state_dict(state, strict=False, assign=True)
    if cfg.tie_word_embeddings:
        model.lm_head.weight = model.embed_tokens.weight
    leftover = [n for n, p in model.named_parameters() if p.is_meta]
    if leftover:
        raise KeyError(f"parameters not loaded from {str(path)!r}: {leftover[:5]}")
    return model.to(device).eval().requires_grad_(False)
