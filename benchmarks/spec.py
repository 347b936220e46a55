"""`turnspec bench spec`: DFlash speculation vs plain decoding vs transformers (plain and
prompt-lookup assisted), same model, same held-out prompts, greedy, same run; table + JSON.
tok/s is decode throughput at concurrency 1 (first token to last; prefill excluded, cold
prefix cache for every prompt). Configurations run interleaved prompt by prompt, so drift in
the machine's speed hits them alike. DFlash runs once per policy (engine/local/spec_policy.py),
block size, verify-confidence threshold (`--confidences`; "p0.1" in the table) and prompt-lookup
drafts where the drafter expects little (`--lookups`; "+lookup"), and verify branches per greedy
row (`--branches`; "+3br": also the block the lookup rule did not pick and the drafter's block
under other first tokens, engine/spec/planner.py; `--branch-plans planned`: "+3br planned", the
swaps engine/spec/swaps.py plans at every position). `--peer-speculator PATH` times a second
drafter beside `--speculator` in every configuration (rows marked "peer"), so two drafters
compare in one run. On CUDA an untimed pass over every prompt and configuration comes first, so
Triton compiles (one per new kernel variant) stay out of the timed pass; the JSON records how
many still happened inside it (`triton_compiles_timed`).

Prompts are the held-out split of a `turnspec speculator datagen` folder (voice/tool turns and
generic chat), so tau here is measured on scenarios the drafter never trained on.

tau is tokens emitted per verify step, over the verify steps only: under the adaptive policy it
is the acceptance of the stretches the policy chose to speculate ("spec tok" says what share of
the tokens those were), which reads higher than the paper's tau of speculating on every step;
`--policies always` measures that one. "90% CI" is a bootstrap over the prompts: tau on a few
turns swings with the one or two the target loops on (docs/history/notes/online-offline-tau.md).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path

import torch

from turnspec.benchmarks.host import cpu_name
from turnspec.benchmarks.spec_report import print_table, result_rows
from turnspec.benchmarks.spec_runs import (
    config_states,
    decode_one,
    engine_runs,
    run_hf,
    spread,
    timed_pass,
)
from turnspec.engine.drafter.folder import DEFAULT_DRAFTER_DIR
from turnspec.engine.local.args import add_engine_args, engine_config_from_args
from turnspec.engine.local.config import LocalEngineConfig
from turnspec.engine.local.spec_policy import SpecPolicy
from turnspec.engine.spec.options import MAX_BRANCHES as MAX_SPEC_BRANCHES
from turnspec.engine.spec.options import SpecOptions
from turnspec.engine.spec.swaps import BRANCH_PLANS

DEFAULT_DATA = DEFAULT_DRAFTER_DIR / "heldout.jsonl"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("spec", help="DFlash vs no speculation vs transformers prompt-lookup")
    p.add_argument("--data", default=str(DEFAULT_DATA),
                   help="datagen folder or .jsonl; its held-out split is used (default: the 32+32 "
                        "held-out samples committed beside the default drafter)")
    p.add_argument("--n", type=int, default=8,
                   help="prompts per source, evenly spread over its held-out samples")
    p.add_argument("--blocks", default="4,8,16", help="block sizes to try, comma-separated")
    p.add_argument("--policies", default="adaptive,always",
                   help="speculation policies to try per block (engine/local/spec_policy.py)")
    p.add_argument("--confidences", default=None,
                   help="verify-confidence thresholds to try (comma-separated; 0 verifies whole "
                        "blocks; default: the engine's, --spec-min-confidence or 0.1 CPU / 0 CUDA)")
    p.add_argument("--lookups", default=None,
                   help="prompt-lookup settings to try: off, on or off,on (default: the engine's, "
                        "--spec-lookup, on by default)")
    p.add_argument("--branches", default=None,
                   help="verify branches per greedy row to try, comma-separated, e.g. 1,2,4 "
                        "(default: the engine's, --spec-branches: 16 on CUDA, 1 on CPU)")
    p.add_argument("--branch-plans", default=None,
                   help="which drafts the extra branches swap, to try with each branch count "
                        "above 1: first, planned or first,planned (engine/spec/swaps.py; "
                        "default: the engine's, --spec-branch-plan)")
    p.add_argument("--datastores", default=None,
                   help="the datastore branch to try with each branch count above 1: off, on or "
                        "off,on (on needs --spec-datastore PATH; default: on with it, else off)")
    p.add_argument("--peer-speculator", default=None,
                   help="a second drafter folder (or 'default') timed beside --speculator in every "
                        "configuration, interleaved prompt by prompt; its rows read 'peer'")
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--lookup-tokens", type=int, default=10, help="prompt_lookup_num_tokens")
    p.add_argument("--no-transformers", action="store_true", help="skip the transformers peers")
    p.add_argument("--warm-pass", choices=("auto", "on", "off"), default="auto",
                   help="run every engine configuration over every prompt once, untimed, first "
                        "(auto: on CUDA, where each new Triton kernel variant compiles for ~1 s "
                        "and would land on whichever configuration meets it first)")
    p.add_argument("--repeat", type=int, default=1,
                   help="timed passes over all prompts; with more than one, each configuration's "
                        "speedup is also reported per pass and as their median, so one swing of "
                        "the host's speed (plain decode is memory-bound and swings more than a "
                        "spec step) cannot decide a comparison (default: %(default)s)")
    p.add_argument("--json", default="bench-spec.json")
    add_engine_args(p, speculator_default="default")
    p.set_defaults(func=run)


@dataclass(slots=True, frozen=True)
class Settings:
    """What to compare, parsed and checked once; empty lists mean the engine's own setting."""
    blocks: list[int]
    policies: list[str]
    confs: list[float]
    lookups: list[bool]
    stores: list[bool]
    counts: list[int]
    plans: list[str]


def settings_from(args: argparse.Namespace, cfg: LocalEngineConfig) -> Settings:
    if cfg.speculator == "none":
        raise ValueError("bench spec needs a drafter: --speculator default|PATH")
    if cfg.spec_datastore_learn:
        raise ValueError("--spec-datastore-learn: bench spec times the same prompts under every "
                         "configuration, so the store would learn the answers it then drafts; "
                         "expected --spec-datastore PATH with answers to other prompts")
    if args.peer_speculator == "none":
        raise ValueError("--peer-speculator none: expected a second drafter, default|PATH (no "
                         "speculation is already every row's baseline)")
    if args.repeat < 1:
        raise ValueError(f"--repeat {args.repeat}: expected at least 1 timed pass")
    stores = ([on_off(x, "--datastores") for x in args.datastores.split(",")] if args.datastores
              else [cfg.spec_datastore is not None])
    if any(stores) and cfg.spec_datastore is None:
        raise ValueError("--datastores on: expected --spec-datastore PATH (the answers to draft from)")
    plans = args.branch_plans.split(",") if args.branch_plans else []
    if not set(plans) <= set(BRANCH_PLANS):
        raise ValueError(f"--branch-plans {args.branch_plans!r}: expected plans of "
                         f"{BRANCH_PLANS}, comma-separated")
    s = Settings(blocks=[int(b) for b in args.blocks.split(",")],
                 policies=args.policies.split(","),
                 confs=[float(c) for c in args.confidences.split(",")] if args.confidences else [],
                 lookups=[on_off(x) for x in args.lookups.split(",")] if args.lookups else [],
                 stores=stores, counts=branch_counts(args.branches), plans=plans)
    for pol in s.policies:  # validates
        SpecPolicy(mode=pol)
    for conf in s.confs:
        SpecOptions(min_confidence=conf)
    return s


def prompts_and_store(args: argparse.Namespace, cfg: LocalEngineConfig, s: Settings):
    """The held-out prompts by source (spread over each), and the datastore (read once: for the
    cores, and for the check that no timed answer is in it)."""
    from turnspec.engine.spec.proposers.datastore import TokenDatastore, read_answers
    from turnspec.speculator.data import read_samples
    from turnspec.speculator.evaluate import no_scored_answers_in

    held_samples = [x for x in read_samples(args.data) if x.split == "heldout"]
    heldout: dict[str, list[list[int]]] = {}
    for x in held_samples:
        heldout.setdefault(x.source, []).append(list(x.input_ids[: x.prompt_len]))
    store = None
    if any(s.stores):
        answers = list(read_answers(cfg.spec_datastore))
        store = TokenDatastore.from_answers(answers, cfg.spec_datastore)
        no_scored_answers_in(Path(cfg.spec_datastore), answers, held_samples)
    by_source = {source: spread(prompts, args.n) for source, prompts in heldout.items()}
    if not by_source:
        raise ValueError(f"{args.data}: no held-out samples")
    return by_source, store


def build_cores(args: argparse.Namespace, cfg: LocalEngineConfig, s: Settings, store):
    """(plain core, spec cores "main" and optionally "peer", transformers or None); each spec
    core is built for the widest configuration and speculates as each configuration says
    (spec_build.respecified)."""
    from turnspec.engine.local.core import EngineCore

    spec_cfg = replace(cfg, spec_block_size=max(s.blocks),
                       spec_branches=max(s.counts) if s.counts else cfg.spec_branches)
    main = EngineCore(spec_cfg, datastore=store)
    spec_cores = {"main": main}
    if args.peer_speculator:
        spec_cores["peer"] = EngineCore(replace(spec_cfg, speculator=args.peer_speculator),
                                        tokenizer=main.tokenizer, datastore=store)
    plain = EngineCore(replace(cfg, speculator="none", spec_datastore=None), tokenizer=main.tokenizer)
    hf = None
    if not args.no_transformers:
        from transformers import AutoModelForCausalLM

        hf = AutoModelForCausalLM.from_pretrained(cfg.model_dir, dtype=cfg.torch_dtype).to(cfg.device).eval()
    return plain, spec_cores, hf


def configurations(s: Settings, bases: dict, cfg: LocalEngineConfig) -> list[tuple]:
    """(policy, block, confidence, lookup, branches, plan, datastore, drafter) for every setting
    asked for; the engine's own where none was."""
    opts = bases["main"].options
    confs, lookups = s.confs or [opts.min_confidence], s.lookups or [opts.lookup]
    counts, plans = s.counts or [opts.branches], s.plans or [cfg.spec_branch_plan]
    return [(pol, b, c, lk, n, plan, ds, d) for pol in s.policies for b in s.blocks for c in confs
            for lk in lookups for n in counts for plan in (plans if n > 1 else plans[:1])
            for ds in (s.stores if n > 1 else [False]) for d in bases]


def run(args: argparse.Namespace) -> int:
    from turnspec.engine.model.cpu_linear import describe_gemm_plan
    from turnspec.kernels.jit_stats import compiled_variants

    cfg = engine_config_from_args(args)
    s = settings_from(args, cfg)
    by_source, store = prompts_and_store(args, cfg, s)
    plain, spec_cores, hf = build_cores(args, cfg, s, store)
    # each core's speculation as built (the widest configuration's scratch KV and the stores)
    bases = {name: core.speculation for name, core in spec_cores.items()}
    eos = plain.tokenizer.eos_token_id
    warm = next(iter(by_source.values()))[0]
    decode_one(plain, warm, 4, None)
    for core in spec_cores.values():
        decode_one(core, warm, 4, max(s.blocks))
    if hf is not None:
        run_hf(hf, warm, 4, eos, None)
    configs = configurations(s, bases, cfg)
    if args.warm_pass == "on" or (args.warm_pass == "auto" and cfg.device.startswith("cuda")):
        for prompts in by_source.values():
            for p in prompts:
                engine_runs(plain, spec_cores, p, args.max_new_tokens,
                            config_states(configs, bases, cfg.max_batch))
    compiles0 = compiled_variants()
    passes = [timed_pass(plain, spec_cores, hf, by_source, configs, bases, args, eos)
              for _ in range(args.repeat)]
    compiles = compiled_variants()
    record = {"bench": "spec", "date": date.today().isoformat(), "device": cfg.device,
              # Triton variants compiled inside the timed pass (None: no compiled kernels ran)
              "triton_compiles_timed": compiles - compiles0
              if cfg.device.startswith("cuda") and compiles is not None else None,
              "cpu": cpu_name() if cfg.device == "cpu" else None,
              "cpu_gemm_plan": describe_gemm_plan(plain.model),
              "dtype": str(cfg.torch_dtype).removeprefix("torch."), "threads": torch.get_num_threads(),
              "speculator": cfg.speculator, "peer_speculator": args.peer_speculator,
              "max_new_tokens": args.max_new_tokens,
              "rows": result_rows(by_source, passes, configs, args.repeat, hf is not None)}
    print_table(record)
    with open(args.json, "w") as f:
        json.dump(record, f, indent=2)
    print(f"wrote {args.json}")
    return 0


def on_off(x: str, flag: str = "--lookups") -> bool:
    if x not in ("on", "off"):
        raise ValueError(f"{flag}: expected on/off values, got {x!r}")
    return x == "on"


def branch_counts(arg: str | None) -> list[int]:
    """--branches "1,2,4" -> [1, 2, 4] ([] when not given: the engine's)."""
    if not arg:
        return []
    try:
        counts = [int(x) for x in arg.split(",")]
    except ValueError:
        counts = []
    if not counts or not all(1 <= n <= MAX_SPEC_BRANCHES for n in counts):
        raise ValueError(f"--branches {arg!r}: expected integers 1..{MAX_SPEC_BRANCHES}, "
                         "comma-separated")
    return counts
