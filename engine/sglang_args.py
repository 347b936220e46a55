"""SGLang's command-line flags, defined once for every command that can run the model through
SGLang (`serve --engine sglang`, `speculator datagen --engine sglang`), and their parse into an
`SGLangConfig`. No sglang import here: the flags parse on machines without it."""

from __future__ import annotations

import argparse
import json

from turnspec.engine.sglang import SGLangConfig

# the flags add_sglang_args defines (argparse dests): the ones a command rejects for another engine
SGLANG_FLAGS = ("sglang_mem_fraction", "sglang_attention_backend", "sglang_arg")


def add_sglang_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("--engine sglang (GPU machines)")
    g.add_argument("--sglang-mem-fraction", type=float, default=0.85,
                   help="share of GPU memory SGLang takes for weights and KV (default: %(default)s)")
    g.add_argument("--sglang-attention-backend", default="triton",
                   help="SGLang attention backend (default: %(default)s; the carried "
                        "sglang-kernel has no FA3)")
    g.add_argument("--sglang-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="one more sglang.Engine keyword (VALUE read as JSON when it parses, "
                        "else as a string); repeatable")


def sglang_extra(pairs: list[str]) -> tuple[tuple[str, object], ...]:
    """`--sglang-arg KEY=VALUE` pairs -> SGLangConfig.extra (VALUE as JSON when it parses)."""
    out = []
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--sglang-arg {pair!r}: expected KEY=VALUE")
        try:
            value: object = json.loads(raw)
        except ValueError:
            value = raw
        out.append((key.strip(), value))
    return tuple(out)


def sglang_config_from_args(args: argparse.Namespace) -> SGLangConfig:
    """The SGLang flags plus --model, --speculator ('default': the committed drafter) and
    --spec-block-size of the local engine's flags (engine/local/args.py)."""
    from turnspec.engine.drafter import DEFAULT_DRAFTER_DIR
    from turnspec.engine.local.args import resolve_model_dir

    spec = str(DEFAULT_DRAFTER_DIR) if args.speculator == "default" else args.speculator
    return SGLangConfig(
        model_dir=resolve_model_dir(args.model), speculator=spec,
        spec_block_size=args.spec_block_size, mem_fraction=args.sglang_mem_fraction,
        attention_backend=args.sglang_attention_backend, extra=sglang_extra(args.sglang_arg))
