"""What `turnspec simulate` needs of a model: its shapes, parsed once from an HF config.json (the
target) or a z-lab DFlash config.json (the drafter), the named presets, and parameter counts.

Counted: every matmul weight, the RMSNorm vectors (two per layer, the final one, Qwen3's per-head
q/k norms) and the embedding table. Ignored: biases (Qwen2's q/k/v biases are about 0.01% of
its weights) and RoPE tables. The counts match the safetensors of SmolLM2-135M (134,515,008)
and of the committed SmolLM2 drafter (15,820,928): tests/benchmarks/test_simulate.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any


@dataclass(slots=True, frozen=True)
class TransformerShape:
    """A decoder-only transformer (Llama / Qwen2 / Qwen3 block: GQA attention, SwiGLU MLP)."""

    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    tie_word_embeddings: bool = False
    qk_norm: bool = False                 # Qwen3: an RMSNorm of head_dim on q and on k
    sliding_window: int | None = None     # what a sliding-attention layer attends to
    sliding_layers: int = 0               # how many layers use it

    def __post_init__(self) -> None:
        for name in ("hidden_size", "intermediate_size", "num_layers", "num_heads",
                     "num_kv_heads", "head_dim", "vocab_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name}: expected a positive int, got {value!r}")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_attention_heads={self.num_heads}: expected a multiple of "
                             f"num_key_value_heads={self.num_kv_heads} (GQA)")
        if not 0 <= self.sliding_layers <= self.num_layers:
            raise ValueError(f"sliding layers: expected 0..{self.num_layers}, got "
                             f"{self.sliding_layers}")
        if self.sliding_layers and (self.sliding_window is None or self.sliding_window < 1):
            raise ValueError(f"sliding_window: expected a positive int when {self.sliding_layers}"
                             f" layers slide, got {self.sliding_window!r}")

    @classmethod
    def from_hf_dict(cls, d: dict[str, Any], where: str = "config.json") -> TransformerShape:
        """The shape keys of an HF config.json (Qwen3 spelling; head_dim and KV heads default
        as transformers does). Sliding layers count only where `layer_types` says so."""
        missing = [k for k in ("hidden_size", "intermediate_size", "num_hidden_layers",
                               "num_attention_heads", "vocab_size") if k not in d]
        if missing:
            raise ValueError(f"{where}: expected the HF config keys {missing}, found none of them")
        heads = int(d["num_attention_heads"])
        types = d.get("layer_types") or ()
        window = d.get("sliding_window")
        sliding = sum(t == "sliding_attention" for t in types) if window else 0
        return cls(hidden_size=int(d["hidden_size"]),
                   intermediate_size=int(d["intermediate_size"]),
                   num_layers=int(d["num_hidden_layers"]), num_heads=heads,
                   num_kv_heads=int(d.get("num_key_value_heads") or heads),
                   head_dim=int(d.get("head_dim") or int(d["hidden_size"]) // heads),
                   vocab_size=int(d["vocab_size"]),
                   tie_word_embeddings=bool(d.get("tie_word_embeddings", False)),
                   qk_norm=d.get("model_type") == "qwen3",
                   sliding_window=int(window) if sliding else None, sliding_layers=sliding)

    @property
    def layer_matmul_params(self) -> int:
        """One layer's matmul weights: q, k, v, o projections and gate, up, down."""
        h, qd, kvd = self.hidden_size, self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        return h * qd + 2 * h * kvd + qd * h + 3 * h * self.intermediate_size

    @property
    def layer_params(self) -> int:
        """One layer: its matmuls, two RMSNorms of hidden size, q/k norms if any."""
        return (self.layer_matmul_params + 2 * self.hidden_size
                + (2 * self.head_dim if self.qk_norm else 0))

    @property
    def lm_head_params(self) -> int:
        return self.vocab_size * self.hidden_size

    @property
    def params(self) -> int:
        """All parameters; a tied embedding is the LM head's matrix, counted once."""
        embedding = 0 if self.tie_word_embeddings else self.lm_head_params
        return (self.num_layers * self.layer_params + self.hidden_size + self.lm_head_params
                + embedding)

    @property
    def read_params(self) -> int:
        """What one forward pass reads in full: layers, final norm, LM head. The embedding
        table is not in it: a pass gathers only the rows of its tokens."""
        return self.num_layers * self.layer_params + self.hidden_size + self.lm_head_params

    @property
    def matmul_params(self) -> int:
        """Weights one token multiplies by: every layer's matmuls and the LM head."""
        return self.num_layers * self.layer_matmul_params + self.lm_head_params

    @property
    def kv_width(self) -> int:
        """K and V elements one position stores in one layer."""
        return 2 * self.num_kv_heads * self.head_dim

    def attended(self, ctx: float) -> float:
        """Positions summed over layers that attention reads at context `ctx`: a sliding
        layer reads at most its window."""
        full = self.num_layers - self.sliding_layers
        window = min(ctx, self.sliding_window) if self.sliding_layers else 0.0
        return full * ctx + self.sliding_layers * window


@dataclass(slots=True, frozen=True)
class DrafterShape:
    """A DFlash drafter in z-lab's layout: a Qwen3-style layer stack (`layers`; its vocabulary is
    the target's, its embedding and LM head are the target's and not its own), an `fc` of
    K·H -> H over the K tapped target layers, and two RMSNorms (hidden_norm, norm)."""

    layers: TransformerShape
    block_size: int
    target_layer_ids: tuple[int, ...]

    def __post_init__(self) -> None:
        if self.block_size < 2:
            raise ValueError(f"drafter block_size: expected >= 2, got {self.block_size}")
        if not self.target_layer_ids or min(self.target_layer_ids) < 0:
            raise ValueError(f"drafter target_layer_ids: expected non-negative layer indices, "
                             f"got {self.target_layer_ids}")

    @classmethod
    def from_hf_dict(cls, d: dict[str, Any], where: str = "drafter config.json") -> DrafterShape:
        ids = (d.get("dflash_config") or {}).get("target_layer_ids", d.get("target_layer_ids"))
        if not ids:
            raise ValueError(f"{where}: expected dflash_config.target_layer_ids (z-lab DFlash "
                             "layout), found none")
        stack = TransformerShape.from_hf_dict(d, where)
        return cls(layers=replace(stack, qk_norm=True),
                   block_size=int(d.get("block_size", 16)),
                   target_layer_ids=tuple(int(i) for i in ids))

    @property
    def num_taps(self) -> int:
        return len(self.target_layer_ids)

    @property
    def fc_params(self) -> int:
        return self.num_taps * self.layers.hidden_size * self.layers.hidden_size

    @property
    def params(self) -> int:
        """The drafter's own weights (what its model.safetensors holds)."""
        s = self.layers
        return s.num_layers * s.layer_params + self.fc_params + 2 * s.hidden_size

    def check_target(self, target: TransformerShape) -> None:
        """The z-lab drafter reuses the target's embedding and LM head and taps its layers."""
        if self.layers.hidden_size != target.hidden_size:
            raise ValueError(f"drafter hidden_size={self.layers.hidden_size}: expected the "
                             f"target's {target.hidden_size} (it reuses the target's LM head)")
        if max(self.target_layer_ids) >= target.num_layers:
            raise ValueError(f"drafter target_layer_ids={self.target_layer_ids}: expected layers "
                             f"of the target's {target.num_layers}")


# Qwen3-8B's config.json: 8,191,030,272 parameters. SmolLM2-135M's: 134,515,008 (tied).
MODEL_PRESETS: dict[str, TransformerShape] = {
    "qwen3-8b": TransformerShape(hidden_size=4096, intermediate_size=12288, num_layers=36,
                                 num_heads=32, num_kv_heads=8, head_dim=128, vocab_size=151936,
                                 tie_word_embeddings=False, qk_norm=True),
    "smollm2-135m": TransformerShape(hidden_size=576, intermediate_size=1536, num_layers=30,
                                     num_heads=9, num_kv_heads=3, head_dim=64, vocab_size=49152,
                                     tie_word_embeddings=True),
}
DRAFTER_PRESETS = ("dflash-5", "none")


def dflash_preset(target: TransformerShape, num_layers: int = 5,
                  block_size: int = 16) -> DrafterShape:
    """`dflash-5`: five layers of the target's own shape tapping five evenly spaced target
    layers (the engine's rule, `build_target_layer_ids`), trained at B=16."""
    from turnspec.engine.drafter.config import build_target_layer_ids  # imports torch; only here

    stack = replace(target, num_layers=num_layers, qk_norm=True, sliding_layers=0,
                    sliding_window=None)
    return DrafterShape(layers=stack, block_size=block_size,
                        target_layer_ids=build_target_layer_ids(target.num_layers, 5))


def read_config(spec: str | Path, what: str) -> dict[str, Any]:
    """A config.json, or the config.json inside a folder."""
    path = Path(spec).expanduser()
    if path.is_dir():
        path = path / "config.json"
    if not path.is_file():
        raise FileNotFoundError(f"{what} {str(spec)!r}: no such config.json or folder with one")
    return read_json_object(path, "a JSON config")


def read_json_object(path: Path, what: str) -> dict[str, Any]:
    """A JSON file that must hold an object; a parse error or another type says which file."""
    try:
        d = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: expected {what}, got a parse error ({e})") from None
    if not isinstance(d, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(d).__name__}")
    return d


def load_model(spec: str) -> tuple[str, TransformerShape]:
    """(label, shape) of a preset name or a path to an HF config.json / model folder."""
    if spec in MODEL_PRESETS:
        return spec, MODEL_PRESETS[spec]
    if "/" not in spec and not spec.endswith(".json") and not Path(spec).exists():
        raise ValueError(f"--model {spec!r}: expected a preset ({', '.join(MODEL_PRESETS)}) or a "
                         "path to a config.json or model folder")
    return str(spec), TransformerShape.from_hf_dict(read_config(spec, "--model"), str(spec))


def load_drafter(spec: str, target: TransformerShape) -> tuple[str, DrafterShape | None]:
    """(label, shape) of `dflash-5`, `none` or a path to a z-lab drafter config.json / folder;
    checked against the target."""
    if spec == "none":
        return spec, None
    if spec == "dflash-5":
        drafter = dflash_preset(target)
    elif "/" not in spec and not spec.endswith(".json") and not Path(spec).exists():
        raise ValueError(f"--drafter {spec!r}: expected {' or '.join(DRAFTER_PRESETS)} or a path "
                         "to a drafter config.json or folder")
    else:
        drafter = DrafterShape.from_hf_dict(read_config(spec, "--drafter"), str(spec))
    drafter.check_target(target)
    return spec, drafter
