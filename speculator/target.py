"""The frozen target for training and offline evaluation, through transformers.

The engine taps the target itself at serve time; here (offline, no engine: layering) the
target is an `AutoModelForCausalLM` from its HF folder. A tap is the output of decoder layer
`id` (HF `hidden_states[id + 1]`, before the final norm), captured with forward hooks; the
forward stops after the last tapped layer and never runs the LM head.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn


class _StopForward(Exception):
    """Raised by the hook on the last tapped layer: later layers are not needed."""


class FrozenTarget:
    """Target features, embedding and LM head; no gradients anywhere."""

    def __init__(self, model: nn.Module, layer_ids: tuple[int, ...]) -> None:
        self.model = model.eval().requires_grad_(False)
        self.layer_ids = tuple(layer_ids)
        layers = _decoder_layers(model)
        if max(self.layer_ids) >= len(layers):
            raise ValueError(f"target_layer_ids={self.layer_ids}: the target has only "
                             f"{len(layers)} layers")
        self._taps: dict[int, Tensor] = {}
        self._stop = True                      # False: run to the final norm (soft labels)
        last = max(self.layer_ids)
        for i in sorted(set(self.layer_ids)):
            layers[i].register_forward_hook(self._hook(i, stop=i == last))
        self.embed_weight: Tensor = model.get_input_embeddings().weight        # [V, H]
        self.head_weight: Tensor = model.get_output_embeddings().weight        # [V, H]

    @classmethod
    def from_model_dir(cls, model_dir: str | Path, layer_ids: tuple[int, ...],
                       device: torch.device | str = "cpu",
                       dtype: torch.dtype = torch.float32) -> FrozenTarget:
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=dtype,
                                                     attn_implementation="sdpa")
        return cls(model.to(device), layer_ids)

    @property
    def device(self) -> torch.device:
        return self.embed_weight.device

    def _hook(self, i: int, stop: bool):
        def hook(_module: nn.Module, _args: Any, output: Any) -> None:
            self._taps[i] = output[0] if isinstance(output, tuple) else output
            if stop and self._stop:
                raise _StopForward
        return hook

    @torch.no_grad()
    def features(self, input_ids: Tensor) -> Tensor:
        """input_ids [b, S] int64 (right-padded: causal, so padding never reaches real rows)
        -> taps [b, S, K*H] in target_layer_ids order."""
        return self._forward(input_ids, full=False)[0]

    @torch.no_grad()
    def features_and_final(self, input_ids: Tensor) -> tuple[Tensor, Tensor]:
        """The whole forward: taps [b, S, K*H] as `features`, and the final-normed hidden
        states [b, S, H] that the LM head turns into the target's next-token logits (the
        soft labels of speculator/soft_labels.py). Costs the layers after the last tap."""
        taps, final = self._forward(input_ids, full=True)
        assert final is not None
        return taps, final

    def _forward(self, input_ids: Tensor, full: bool) -> tuple[Tensor, Tensor | None]:
        """Taps of one forward, and (full) the final-normed hidden states; without `full` the
        forward stops at the last tapped layer."""
        self._taps.clear()
        base = getattr(self.model, "model", self.model)
        final = None
        self._stop = not full
        try:
            with contextlib.suppress(_StopForward):
                final = base(input_ids=input_ids, use_cache=False).last_hidden_state
        finally:
            self._stop = True
        taps = [self._taps[i] for i in self.layer_ids]
        self._taps.clear()
        return torch.cat(taps, dim=-1), final

    def embed(self, ids: Tensor) -> Tensor:
        """ids [...] int64 -> [..., H] with the frozen target embedding."""
        return nn.functional.embedding(ids, self.embed_weight)

    def logits(self, hidden: Tensor) -> Tensor:
        """hidden [..., H] -> [..., V] with the frozen target LM head."""
        w = self.head_weight
        if w.dtype != hidden.dtype and not torch.is_autocast_enabled(hidden.device.type):
            w = w.to(hidden.dtype)
        return nn.functional.linear(hidden, w)


def _decoder_layers(model: nn.Module) -> nn.ModuleList:
    base = getattr(model, "model", model)
    layers = getattr(base, "layers", None)
    if not isinstance(layers, nn.ModuleList):
        raise ValueError(f"{type(model).__name__}: expected `.model.layers` (Llama/Qwen-style "
                         "decoder), found none")
    return layers


def read_target_config(model_dir: str | Path) -> dict[str, Any]:
    path = Path(model_dir) / "config.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: expected an HF model folder with config.json")
    return json.loads(path.read_text())


_MASK_NAMES = ("<|MASK|>", "<|mask|>", "<mask>", "[MASK]")


def default_mask_token_id(model_dir: str | Path) -> int:
    """The target's own MASK token if its tokenizer has one (SGLang's default `<|MASK|>`),
    else SmolLM2's unused `<empty_output>` (id 16; see config.SMOLLM2_MASK_TOKEN_ID)."""
    from turnspec.engine.drafter.config import SMOLLM2_MASK_TOKEN_ID

    path = Path(model_dir) / "tokenizer.json"
    added = json.loads(path.read_text()).get("added_tokens", []) if path.is_file() else []
    by_name = {t["content"]: int(t["id"]) for t in added}
    for name in _MASK_NAMES:
        if name in by_name:
            return by_name[name]
    if by_name.get("<empty_output>") == SMOLLM2_MASK_TOKEN_ID:
        return SMOLLM2_MASK_TOKEN_ID
    raise ValueError(f"{model_dir}: the tokenizer has no MASK token ({', '.join(_MASK_NAMES)}) "
                     "and is not SmolLM2's; pass --mask-token-id with an id the target never "
                     "emits (an unused special token)")
