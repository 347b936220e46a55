"""The drafter folder in the z-lab / SGLang DFlash layout: read, load, save (docs/dflash.md §4).

A drafter folder holds `config.json` (`architectures: ["DFlashDraftModel"]`, `model_type:
"qwen3"`, `dflash_config.{mask_token_id, target_layer_ids}`, ...) and `model.safetensors` with
`layers.{i}.self_attn.{q,k,v,o}_proj.weight`, `layers.{i}.self_attn.{q,k}_norm.weight`,
`layers.{i}.mlp.{gate,up,down}_proj.weight`, `layers.{i}.{input,post_attention}_layernorm.weight`,
`fc.weight`, `hidden_norm.weight`, `norm.weight`; no embedding, no LM head.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from turnspec.engine.drafter.config import DFlashConfig
from turnspec.engine.drafter.model import DFlashDrafter

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
DEFAULT_DRAFTER_DIR = Path(__file__).resolve().parents[2] / "models" / "assets" / "smollm2-dflash"


def save_drafter(drafter: DFlashDrafter, out_dir: str | Path,
                 dtype: torch.dtype | None = None) -> Path:
    """Write config.json + model.safetensors; dtype None keeps the parameters' dtype."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cfg = drafter.config.to_hf_dict()
    tensors = {}
    for name, t in drafter.state_dict().items():
        t = t.detach().to("cpu")
        tensors[name] = (t.to(dtype) if dtype is not None else t).contiguous()
    cfg["torch_dtype"] = cfg["dtype"] = str(next(iter(tensors.values())).dtype).removeprefix(
        "torch.")                                        # transformers 4 / 5 spellings
    save_file(tensors, str(out / WEIGHTS_FILE), metadata={"format": "pt"})
    (out / WEIGHTS_FILE).chmod(0o644)                    # safetensors writes 0600
    (out / CONFIG_FILE).write_text(json.dumps(cfg, indent=2) + "\n")
    return out


def read_drafter(path: str | Path, device: torch.device | str = "cpu",
                 dtype: torch.dtype | None = None) -> DFlashDrafter:
    """Load a z-lab-layout folder. dtype None keeps the stored dtype. Every key must match."""
    folder = Path(path)
    cfg_path, w_path = folder / CONFIG_FILE, folder / WEIGHTS_FILE
    if not cfg_path.is_file() or not w_path.is_file():
        raise FileNotFoundError(f"{folder}: expected {CONFIG_FILE} and {WEIGHTS_FILE} "
                                "(a DFlash drafter folder)")
    config = DFlashConfig.from_hf_dict(json.loads(cfg_path.read_text()))
    state = load_file(str(w_path))
    with torch.device("meta"):
        drafter = DFlashDrafter(config)
    expected = {k: tuple(v.shape) for k, v in drafter.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in state.items()}
    if expected != got:
        missing = sorted(set(expected) - set(got))[:5]
        extra = sorted(set(got) - set(expected))[:5]
        shape = sorted(k for k in set(expected) & set(got) if expected[k] != got[k])[:5]
        raise ValueError(f"{w_path}: weights do not match config.json: missing {missing}, "
                         f"unexpected {extra}, wrong shape {shape}")
    drafter.load_state_dict(state, assign=True)
    drafter = drafter.to(device=device, dtype=dtype) if dtype else drafter.to(device)
    return drafter.eval().requires_grad_(False)


def drafter_folder(path_or_default: str | Path | None) -> Path:
    """The folder `--speculator` names: None or "default" is the committed SmolLM2 drafter's."""
    if path_or_default is None or str(path_or_default) == "default":
        return DEFAULT_DRAFTER_DIR
    return Path(path_or_default)


def load_drafter(path_or_default: str | Path | None = None,
                 device: torch.device | str = "cpu",
                 dtype: torch.dtype | None = None) -> DFlashDrafter:
    """The engine's entry point: a drafter folder, or None/"default" for the committed
    SmolLM2 drafter (models/assets/smollm2-dflash). Returned in eval mode, no grads."""
    folder = drafter_folder(path_or_default)
    if folder == DEFAULT_DRAFTER_DIR and not (folder / WEIGHTS_FILE).is_file():
        raise FileNotFoundError(f"the default drafter is not in {DEFAULT_DRAFTER_DIR}: "
                                "train one with `turnspec speculator train` and export it "
                                "there, or pass a drafter folder")
    return read_drafter(folder, device=device, dtype=dtype)
