"""DFlash drafter configuration and its z-lab/SGLang `config.json` form.

The drafter is a stack of Qwen3-style layers at the target's hidden size, conditioned on the
outputs of K target layers (docs/dflash.md §1, §4). One frozen dataclass holds every shape
the model, the trainer and the engine need; it is parsed once at the edge (`from_hf_dict`,
`for_target`) and validated here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

LAYER_TYPES = ("full_attention", "sliding_attention")
ARCHITECTURE = "DFlashDraftModel"

# SmolLM2 (vocab 49152) has no MASK token. Id 16 `<empty_output>` is a StarCoder-era special
# (ids 3..16) that the chat template never emits and plain text never tokenizes to; its
# embedding row equals those of ids 5 and 7..15 (norm 3.2937, cosine 1.00), the signature of a
# row that never received a gradient in pretraining. So the target never sees or emits it, and
# it cannot collide with a real token in a block. See models/assets/smollm2-dflash/README.md.
SMOLLM2_MASK_TOKEN_ID = 16

# Paper Eq. 4 / §A.1: loss decay gamma per block size.
_PAPER_GAMMA = {16: 7.0, 10: 5.0, 8: 4.0}


def build_target_layer_ids(num_target_layers: int, k: int = 5) -> tuple[int, ...]:
    """Target layers whose outputs feed the drafter: K spread evenly over [1, L-3].

    Same rule as z-lab's `build_target_layer_ids` (Python `round`, i.e. half-to-even);
    for L=36, K=5: (1, 9, 17, 25, 33); for SmolLM2 (L=30): (1, 8, 14, 20, 27).
    """
    if num_target_layers < 4:
        raise ValueError(f"num_target_layers: expected >= 4, got {num_target_layers}")
    if k < 1:
        raise ValueError(f"k: expected >= 1 tapped layers, got {k}")
    if k == 1:
        return (num_target_layers // 2,)
    start, end = 1, num_target_layers - 3
    return tuple(int(round(start + i * (end - start) / (k - 1))) for i in range(k))


def default_gamma(block_size: int) -> float:
    """Loss-decay gamma: the paper's value for B in {8, 10, 16}, else scaled as 7/16 * B."""
    return _PAPER_GAMMA.get(block_size, max(1.0, 7.0 * block_size / 16.0))


@dataclass(slots=True, frozen=True)
class DFlashConfig:
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    rms_norm_eps: float
    rope_theta: float
    block_size: int
    mask_token_id: int
    target_layer_ids: tuple[int, ...]
    num_target_layers: int
    vocab_size: int
    layer_types: tuple[str, ...] = field(default=())  # () means all "full_attention"
    sliding_window: int | None = None
    max_position_embeddings: int = 32768

    def __post_init__(self) -> None:
        for name in ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim",
                     "intermediate_size", "num_target_layers", "vocab_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"DFlashConfig.{name}: expected a positive int, got {value!r}")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"DFlashConfig.num_heads={self.num_heads}: expected a multiple of "
                             f"num_kv_heads={self.num_kv_heads} (GQA)")
        if self.head_dim % 2:
            raise ValueError(f"DFlashConfig.head_dim={self.head_dim}: expected even (RoPE)")
        if self.block_size < 2:
            raise ValueError(f"DFlashConfig.block_size: expected >= 2, got {self.block_size}")
        if not 0 <= self.mask_token_id < self.vocab_size:
            raise ValueError(f"DFlashConfig.mask_token_id={self.mask_token_id}: expected an id "
                             f"in [0, {self.vocab_size})")
        if not (self.rms_norm_eps > 0 and self.rope_theta > 0):
            raise ValueError(f"DFlashConfig: expected rms_norm_eps > 0 and rope_theta > 0, got "
                             f"{self.rms_norm_eps}, {self.rope_theta}")
        ids = tuple(int(i) for i in self.target_layer_ids)
        if not ids or any(not 0 <= i < self.num_target_layers for i in ids):
            raise ValueError(f"DFlashConfig.target_layer_ids={ids}: expected a non-empty tuple "
                             f"of layer indices in [0, {self.num_target_layers})")
        object.__setattr__(self, "target_layer_ids", ids)
        types = tuple(self.layer_types) or ("full_attention",) * self.num_layers
        if len(types) != self.num_layers or any(t not in LAYER_TYPES for t in types):
            raise ValueError(f"DFlashConfig.layer_types={types}: expected {self.num_layers} "
                             f"entries from {LAYER_TYPES}")
        object.__setattr__(self, "layer_types", types)
        if "sliding_attention" in types and (self.sliding_window is None
                                             or self.sliding_window < 1):
            raise ValueError("DFlashConfig.sliding_window: expected a positive int when a layer "
                             f"is 'sliding_attention', got {self.sliding_window!r}")

    @property
    def num_taps(self) -> int:
        return len(self.target_layer_ids)

    @classmethod
    def for_target(cls, target: dict[str, Any], *, num_layers: int = 3, block_size: int = 16,
                   mask_token_id: int, k: int = 5, num_heads: int | None = None,
                   num_kv_heads: int | None = None, head_dim: int | None = None,
                   intermediate_size: int | None = None) -> DFlashConfig:
        """A drafter for a target HF `config.json` dict: hidden size, RoPE theta, RMS eps and
        vocab are the target's; attention/MLP shapes default to the target's too."""
        hidden = int(target["hidden_size"])
        heads = int(num_heads or target["num_attention_heads"])
        n_target = int(target["num_hidden_layers"])
        return cls(
            hidden_size=hidden, num_layers=num_layers, num_heads=heads,
            num_kv_heads=int(num_kv_heads or target.get("num_key_value_heads") or heads),
            head_dim=int(head_dim or target.get("head_dim") or hidden // heads),
            intermediate_size=int(intermediate_size or target["intermediate_size"]),
            rms_norm_eps=float(target.get("rms_norm_eps", 1e-6)),
            rope_theta=_rope_theta(target, strict=False), block_size=block_size,
            mask_token_id=mask_token_id,
            target_layer_ids=build_target_layer_ids(n_target, k), num_target_layers=n_target,
            vocab_size=int(target["vocab_size"]),
            max_position_embeddings=int(target.get("max_position_embeddings", 32768)))

    def to_hf_dict(self) -> dict[str, Any]:
        """The z-lab / SpecForge `config.json` that SGLang and vLLM load."""
        sliding = "sliding_attention" in self.layer_types
        return {
            "architectures": [ARCHITECTURE], "model_type": "qwen3",
            "num_hidden_layers": self.num_layers, "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_attention_heads": self.num_heads, "num_key_value_heads": self.num_kv_heads,
            "head_dim": self.head_dim, "hidden_act": "silu", "rms_norm_eps": self.rms_norm_eps,
            "rope_theta": self.rope_theta, "rope_scaling": None,
            "rope_parameters": {"rope_type": "default", "rope_theta": self.rope_theta},
            "max_position_embeddings": self.max_position_embeddings,
            "vocab_size": self.vocab_size, "tie_word_embeddings": False,
            "attention_bias": False, "attention_dropout": 0.0, "initializer_range": 0.02,
            "block_size": self.block_size, "num_target_layers": self.num_target_layers,
            "dflash_config": {"mask_token_id": self.mask_token_id,
                              "target_layer_ids": list(self.target_layer_ids)},
            "layer_types": list(self.layer_types), "use_sliding_window": sliding,
            "sliding_window": self.sliding_window if sliding else None,
            "max_window_layers": self.num_layers,
        }

    @classmethod
    def from_hf_dict(cls, d: dict[str, Any]) -> DFlashConfig:
        """Parse a z-lab-layout `config.json` (the inverse of `to_hf_dict`)."""
        archs = d.get("architectures") or [ARCHITECTURE]
        if ARCHITECTURE not in archs:
            raise ValueError(f"config.json architectures={archs}: expected [{ARCHITECTURE!r}]")
        dflash = d.get("dflash_config") or {}
        mask = dflash.get("mask_token_id", d.get("mask_token_id"))
        ids = dflash.get("target_layer_ids", d.get("target_layer_ids"))
        if mask is None or ids is None:
            raise ValueError("config.json: expected dflash_config.mask_token_id and "
                             f"dflash_config.target_layer_ids, got dflash_config={dflash}")
        hidden, heads = int(d["hidden_size"]), int(d["num_attention_heads"])
        n_layers = int(d["num_hidden_layers"])
        types = tuple(d.get("layer_types") or ("full_attention",) * n_layers)
        sliding = "sliding_attention" in types
        return cls(
            hidden_size=hidden, num_layers=n_layers, num_heads=heads,
            num_kv_heads=int(d.get("num_key_value_heads") or heads),
            head_dim=int(d.get("head_dim") or hidden // heads),
            intermediate_size=int(d["intermediate_size"]),
            rms_norm_eps=float(d.get("rms_norm_eps", 1e-6)), rope_theta=_rope_theta(d),
            block_size=int(d.get("block_size", dflash.get("block_size", 16))),
            mask_token_id=int(mask), target_layer_ids=tuple(int(i) for i in ids),
            num_target_layers=int(d.get("num_target_layers",
                                        dflash.get("num_target_layers", max(ids) + 4))),
            vocab_size=int(d["vocab_size"]), layer_types=types,
            sliding_window=int(d["sliding_window"]) if sliding and d.get("sliding_window")
            else None,
            max_position_embeddings=int(d.get("max_position_embeddings", 32768)))


def _rope_theta(d: dict[str, Any], strict: bool = True) -> float:
    """rope_theta from a transformers 4 (`rope_theta`) or 5 (`rope_parameters`) config dict.

    strict: reject scaled RoPE (the drafter implements plain RoPE only); a target's scaling is
    not inherited (`for_target` passes strict=False and the drafter uses plain RoPE).
    """
    params = d.get("rope_parameters") or {}
    theta = params.get("rope_theta", d.get("rope_theta"))
    if theta is None:
        raise ValueError("config: expected rope_theta or rope_parameters.rope_theta, found none")
    scaling = d.get("rope_scaling") or {}
    rope_type = params.get("rope_type", scaling.get("rope_type", scaling.get("type", "default")))
    if strict and rope_type not in ("default", None):
        raise ValueError(f"config: rope_type {rope_type!r} is not supported by the drafter; "
                         "expected 'default' (plain RoPE)")
    return float(theta)
