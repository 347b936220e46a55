"""SGLang's command-line flags, defined once for every command that can run the model through
SGLang (`serve --engine sglang`, `speculator datagen --engine sglang`), and their parse into an
`SGLangConfig`. No sglang import here: the flags parse on machines without it."""

from __future__ import annotations

import argparse
import json

from turnspec.engine.sglang import SGLangConfig
from turnspec.engine.sglang_plugin import config as plugin_env
from turnspec.engine.sglang_plugin.config import MODES, PLAN_POINTS, WIDTHS, PluginConfig

# the local engine's flags SGLang reads too (sglang_config_from_args)
SHARED_ENGINE_FLAGS = ("model", "speculator", "spec_block_size", "spec_datastore",
                       "spec_datastore_learn", "spec_datastore_learn_tokens")

# the plugin's environment (what SGLang's own server reads) as this command line spells it
FLAG_OF = {f"{plugin_env.ENV_APPEND_GRAPHS}=1": "--sglang-append-graphs",
           plugin_env.ENV_EARLY: "--sglang-early-first-token",
           plugin_env.ENV_LEARN: "--spec-datastore-learn", plugin_env.ENV_DATASTORE: "--spec-datastore",
           plugin_env.ENV_PLAN_AT: "--sglang-spec-plan-at", plugin_env.ENV_WIDTH: "--sglang-spec-width",
           plugin_env.ENV_MODE: "--sglang-spec"}


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
    g.add_argument("--sglang-spec", choices=MODES, default="off",
                   help="turnspec's speculator inside SGLang's DFLASH worker (the plugin, "
                        "engine/sglang_plugin/): lookup = each greedy row verifies the block "
                        "turnspec's planner picks, the drafter's or its prompt-lookup "
                        "continuation; trees = a token tree of the most likely of those and "
                        "the drafter's next guesses, in the same verify (attention backend "
                        "triton, planned on the GPU); off = stock DFLASH (default: %(default)s)")
    g.add_argument("--sglang-spec-plan-at", choices=PLAN_POINTS, default="device",
                   help="where the plugin plans: device = the lookup and the rule on the GPU, "
                        "over each request's tokens kept there, so the host never waits; "
                        "verify = on the host, before SGLang loads the verify (slower: "
                        "docs/benchmarks.md) (default: %(default)s)")
    g.add_argument("--sglang-spec-width", choices=WIDTHS, default="fixed",
                   help="the plugin's verify width: fixed = every decode step verifies DFLASH's "
                        "block (or trees); served = each step takes that or plain decode, "
                        "whichever has committed more tokens a second at its batch size as "
                        "served (a full batch falls to plain decode where a wide verify costs "
                        "more than it commits); plain = every decode step plain, a check of "
                        "what that step costs against no speculation (default: %(default)s)")
    g.add_argument("--sglang-append-graphs", action="store_true",
                   help="the plugin replays DFLASH's write of the drafter's context after each "
                        "decode step from CUDA graphs captured at start, in place of SGLang's "
                        "eager write (engine/sglang_plugin/append_graphs.py)")
    g.add_argument("--sglang-early-first-token", type=int, default=0, metavar="ROWS",
                   help="a decode step of at most ROWS rows right after a prefill is launched "
                        "once the prefill's first token is out, not before (SGLang's overlap "
                        "hands it back after launching that step; engine/sglang_plugin/"
                        "first_token.py); 0 = SGLang's overlap (default: %(default)s)")


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
    """The SGLang flags plus --model, --speculator ('default': the committed drafter),
    --spec-block-size and the datastore's flags of the local engine's (engine/local/args.py;
    the datastore is a branch of the plugin's trees)."""
    from pathlib import Path

    from turnspec.engine.drafter import DEFAULT_DRAFTER_DIR
    from turnspec.engine.local.args import resolve_model_dir

    store, learn = args.spec_datastore, args.spec_datastore_learn
    if (store or learn) and args.sglang_spec != "trees":
        raise ValueError("--spec-datastore / --spec-datastore-learn under --engine sglang: the "
                         "store's continuation is a branch of turnspec's trees; expected "
                         f"--sglang-spec trees, got {args.sglang_spec}")
    if store and not Path(store).exists():
        raise ValueError(f"--spec-datastore {store}: no such file or folder")
    spec = str(DEFAULT_DRAFTER_DIR) if args.speculator == "default" else args.speculator
    try:
        plugin = PluginConfig(mode=args.sglang_spec, plan_at=args.sglang_spec_plan_at,
                              datastore=store, width=args.sglang_spec_width,
                              append_graphs=args.sglang_append_graphs,
                              early_rows=args.sglang_early_first_token,
                              learn_tokens=args.spec_datastore_learn_tokens if learn else 0)
    except ValueError as e:
        raise ValueError(in_flags(str(e))) from None
    return SGLangConfig(
        model_dir=resolve_model_dir(args.model), speculator=spec,
        spec_block_size=args.spec_block_size, mem_fraction=args.sglang_mem_fraction,
        attention_backend=args.sglang_attention_backend, extra=sglang_extra(args.sglang_arg),
        plugin=plugin)


def in_flags(message: str) -> str:
    """A refusal of the plugin's config, which names its environment variables, in this command
    line's flags: `TURNSPEC_SGLANG_SPEC=lookup` reads `--sglang-spec lookup`."""
    for env, flag in FLAG_OF.items():  # the longer of two names sharing a prefix first
        message = message.replace(f"{env}=", f"{flag} ").replace(env, flag)
    return message


def other_engine_flags(args: argparse.Namespace, command: str,
                       local_only: tuple[str, ...] = ()) -> str | None:
    """What is wrong when `args` (with `args.engine`) sets a flag the chosen engine would ignore
    silently, None when nothing is: under sglang, the local engine's flags SGLang does not read
    (engine/local/args.py, plus the command's own `local_only` dests, all defaulting to None);
    under local, SGLang's flags. `command` names the command in the message ("serve")."""
    from turnspec.engine.local.args import add_engine_args

    if args.engine == "sglang":
        local = {k: v for k, v in parser_defaults(add_engine_args).items()
                 if k not in SHARED_ENGINE_FLAGS}
        given = given_flags(args, {**local, **dict.fromkeys(local_only)})
        if given:
            return (f"{command} --engine sglang: {', '.join(given)} apply to the local engine "
                    "only; expected SGLang's own flags (--sglang-mem-fraction, --sglang-arg "
                    "KEY=VALUE) instead")
        return None
    given = given_flags(args, parser_defaults(add_sglang_args))  # every one is SGLang's only
    return f"{command} --engine local: {', '.join(given)} apply to --engine sglang only" if given else None


def parser_defaults(add) -> dict[str, object]:
    """The defaults of the flags `add(parser)` defines."""
    p = argparse.ArgumentParser(add_help=False)
    add(p)
    return vars(p.parse_args([]))


def given_flags(args: argparse.Namespace, defaults: dict[str, object]) -> list[str]:
    """The flags among `defaults` whose value in args is not their default, as typed."""
    return ["--" + k.replace("_", "-") for k, v in defaults.items() if getattr(args, k) != v]
