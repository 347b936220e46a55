"""ModelConfig: an HF config.json of the Llama / Qwen2 / Qwen3 families, parsed once, validated."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# model_type -> (qkv bias default, per-head q/k RMSNorm)
SUPPORTED_FAMILIES: dict[str, tuple[bool, bool]] = {
    "llama": (False, False),
    "qwen2": (True, False),
    "qwen3": (False, True),
}


@dataclass(slots=True, frozen=True)
class RopeConfig:
    theta: float
    kind: str = "default"  # "default" | "llama3"
    factor: float = 1.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_position: int = 8192

    def __post_init__(self) -> None:
        if self.kind not in ("default", "llama3"):
            raise ValueError(f"rope_scaling.rope_type: expected 'default' or 'llama3', got {self.kind!r}")
        if self.theta <= 0:
            raise ValueError(f"rope_theta: expected > 0, got {self.theta}")


@dataclass(slots=True, frozen=True)
class ModelConfig:
    model_type: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rms_norm_eps: float
    rope: RopeConfig
    max_position_embeddings: int
    tie_word_embeddings: bool
    qkv_bias: bool
    qk_norm: bool
    eos_token_ids: tuple[int, ...]
    bos_token_id: int | None = None

    def __post_init__(self) -> None:
        for name in ("vocab_size", "hidden_size", "intermediate_size", "num_layers", "num_heads",
                     "num_kv_heads", "head_dim", "max_position_embeddings"):
            v = getattr(self, name)
            if not isinstance(v, int) or v <= 0:
                raise ValueError(f"config.{name}: expected a positive integer, got {v!r}")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_attention_heads ({self.num_heads}) must be a multiple of "
                             f"num_key_value_heads ({self.num_kv_heads})")

    @property
    def q_size(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        return self.num_kv_heads * self.head_dim

    @classmethod
    def from_hf_dict(cls, d: dict[str, Any]) -> ModelConfig:
        mt = d.get("model_type")
        if mt not in SUPPORTED_FAMILIES:
            raise ValueError(f"unsupported architecture model_type={mt!r} "
                             f"(architectures={d.get('architectures')}); expected one of "
                             f"{sorted(SUPPORTED_FAMILIES)}")
        bias_default, qk_norm = SUPPORTED_FAMILIES[mt]
        heads = d["num_attention_heads"]
        rope_params = d.get("rope_parameters") or {}
        scaling = d.get("rope_scaling") or {}
        theta = rope_params.get("rope_theta", d.get("rope_theta", 10000.0))
        kind = (scaling.get("rope_type") or scaling.get("type")
                or rope_params.get("rope_type") or "default")
        src = scaling if scaling else rope_params
        rope = RopeConfig(
            theta=float(theta), kind=kind,
            factor=float(src.get("factor", 1.0)),
            low_freq_factor=float(src.get("low_freq_factor", 1.0)),
            high_freq_factor=float(src.get("high_freq_factor", 4.0)),
            original_max_position=int(src.get("original_max_position_embeddings", 8192)))
        eos = d.get("eos_token_id")
        eos_ids = tuple(eos) if isinstance(eos, list) else ((eos,) if eos is not None else ())
        return cls(
            model_type=mt,
            vocab_size=d["vocab_size"],
            hidden_size=d["hidden_size"],
            intermediate_size=d["intermediate_size"],
            num_layers=d["num_hidden_layers"],
            num_heads=heads,
            num_kv_heads=d.get("num_key_value_heads", heads),
            head_dim=d.get("head_dim") or d["hidden_size"] // heads,
            rms_norm_eps=float(d.get("rms_norm_eps", 1e-6)),
            rope=rope,
            max_position_embeddings=d.get("max_position_embeddings", 4096),
            tie_word_embeddings=bool(d.get("tie_word_embeddings", False)),
            qkv_bias=bool(d.get("attention_bias", bias_default)),
            qk_norm=qk_norm,
            eos_token_ids=eos_ids,
            bos_token_id=d.get("bos_token_id"),
        )

    @classmethod
    def from_model_dir(cls, model_dir: str | Path) -> ModelConfig:
        path = Path(model_dir)
        if not path.is_dir():
            raise FileNotFoundError(f"model folder {str(path)!r} does not exist; expected a local "
                                    "HF folder with config.json, *.safetensors and tokenizer files")
        cfg = path / "config.json"
        if not cfg.is_file():
            raise FileNotFoundError(f"{str(path)!r} has no config.json; expected a local HF model folder")
        return cls.from_hf_dict(json.loads(cfg.read_text()))
