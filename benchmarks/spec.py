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
import time
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from statistics import median

import torch

from turnspec.benchmarks.host import cpu_name
from turnspec.engine.drafter.folder import DEFAULT_DRAFTER_DIR
from turnspec.engine.local.args import add_engine_args, engine_config_from_args
from turnspec.engine.local.spec_build import Speculation, respecified
from turnspec.engine.local.spec_policy import SpecPolicy
from turnspec.engine.spec.options import MAX_BRANCHES as MAX_SPEC_BRANCHES
from turnspec.engine.spec.options import SpecOptions
from turnspec.engine.spec.swaps import BRANCH_PLANS
from turnspec.speculator.tau import format_interval, tau_interval

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


@dataclass(slots=True)
class ConfigTotals:
    """One configuration's totals over the prompts of a source."""

    tokens: list[list[int]] = field(default_factory=list)
    secs: float = 0.0
    steps: list[int] = field(default_factory=list)      # verify steps, per prompt
    committed: list[int] = field(default_factory=list)  # tokens from verify steps, per prompt

    def add(self, tokens: list[int], secs: float, steps: int = 0, committed: int = 0) -> None:
        self.tokens.append(tokens)
        self.secs += secs
        self.steps.append(steps)
        self.committed.append(committed)

    def result(self) -> dict:
        n = sum(len(t) - 1 for t in self.tokens)
        steps, committed = sum(self.steps), sum(self.committed)
        return {"tok_s": n / self.secs, "seconds": self.secs, "generated": n,
                "tau": committed / steps if steps else None,
                "tau_ci90": tau_interval(self.committed, self.steps) if steps else None,
                "spec_share": committed / n if steps and n else None}


def decode_one(core, prompt: list[int], max_new: int, block: int | None) -> tuple:
    """One prompt from a cold prefix cache. Decode time only (first token to last), so
    prefill — identical with or without speculation — does not dilute tok/s."""
    from turnspec.benchmarks import runs as B

    B.clear_prefix_cache(core)
    r = B.run_core(core, [prompt], max_new, concurrent=False, spec_block_size=block)
    spec = r.spec[0]
    return (r.tokens[0], r.seconds[0] - r.ttft_ms[0] / 1000.0,
            spec.verify_steps if spec else 0, spec.committed_tokens if spec else 0)


def _engine_runs(plain_core, spec_cores: dict[str, object], prompt: list[int], max_new: int,
                 states: dict[tuple, Speculation]) -> list[tuple]:
    """`decode_one` for no speculation, then for each (policy, block, confidence, lookup,
    branches, plan, datastore, drafter) in `states` order with that configuration's speculation
    (its options and policy state, `_states`) on that drafter's spec core ("main" or "peer")."""
    runs = [decode_one(plain_core, prompt, max_new, None)]
    for (_, block, *_, drafter), spec in states.items():
        core = spec_cores[drafter]
        core.speculation = spec
        runs.append(decode_one(core, prompt, max_new, block))
    return runs


def _on_off(x: str, flag: str = "--lookups") -> bool:
    if x not in ("on", "off"):
        raise ValueError(f"{flag}: expected on/off values, got {x!r}")
    return x == "on"


def _branch_counts(arg: str | None) -> list[int]:
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


def _states(configs: list[tuple], bases: dict[str, Speculation],
            max_batch: int) -> dict[tuple, Speculation]:
    """Each configuration (policy, block, confidence, lookup, branches, plan, datastore,
    drafter) as a speculation of its drafter's core (`bases`: each core's own, built for the
    widest configuration), with a fresh policy state, as `_engine_runs` takes them."""
    out = {}
    for c in configs:
        base = bases[c[7]]
        opts = replace(base.options, min_confidence=c[2], lookup=c[3], branches=c[4], plan=c[5])
        out[c] = respecified(base, opts, c[0], max_batch, datastore=c[6])
    return out


def _config_label(x: dict) -> str:
    """A spec row's or `best`'s settings: "adaptive B=8 p0.1 +lookup +3br" ("+3br planned"
    with the planned branches, "+3br +ds" with the datastore branch)."""
    n = x.get("branches", 1)
    plan = f" {x['plan']}" if n > 1 and x.get("plan", "first") != "first" else ""
    plan += " +ds" if n > 1 and x.get("datastore") else ""
    return (f"{x['policy']} B={x['block']} p{x.get('min_confidence', 0):g}"
            + (" +lookup" if x.get("lookup") else "") + (f" +{n}br{plan}" if n > 1 else "")
            + (" peer" if x.get("drafter") == "peer" else ""))


def _run_hf(hf, prompt: list[int], max_new: int, eos: int, lookup: int | None) -> tuple:
    """Same accounting as decode_one: decode time = generate time minus a 1-token generate
    (the prefill and first token) on the same prompt."""
    kw = {"prompt_lookup_num_tokens": lookup} if lookup else {}
    x = torch.tensor([prompt], device=hf.device)
    t0 = time.perf_counter()
    hf.generate(x, max_new_tokens=1, do_sample=False, eos_token_id=eos, pad_token_id=eos)
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = hf.generate(x, max_new_tokens=max_new, do_sample=False, eos_token_id=eos, pad_token_id=eos, **kw)
    return out[0, len(prompt):].tolist(), time.perf_counter() - t0 - t_first


def run(args: argparse.Namespace) -> int:
    from turnspec.engine.local.core import EngineCore
    from turnspec.engine.model.cpu_linear import describe_gemm_plan
    from turnspec.engine.spec.proposers.datastore import TokenDatastore, read_answers
    from turnspec.kernels.jit_stats import compiled_variants
    from turnspec.speculator.data import read_samples
    from turnspec.speculator.evaluate import no_scored_answers_in

    cfg = engine_config_from_args(args)
    if cfg.speculator == "none":
        raise ValueError("bench spec needs a drafter: --speculator default|PATH")
    if cfg.spec_datastore_learn:
        raise ValueError("--spec-datastore-learn: bench spec times the same prompts under every "
                         "configuration, so the store would learn the answers it then drafts; "
                         "expected --spec-datastore PATH with answers to other prompts")
    if args.peer_speculator == "none":
        raise ValueError("--peer-speculator none: expected a second drafter, default|PATH (no "
                         "speculation is already every row's baseline)")
    blocks = [int(b) for b in args.blocks.split(",")]
    policies = args.policies.split(",")
    if args.repeat < 1:
        raise ValueError(f"--repeat {args.repeat}: expected at least 1 timed pass")
    confs = [float(c) for c in args.confidences.split(",")] if args.confidences else []
    lookups = [_on_off(x) for x in args.lookups.split(",")] if args.lookups else []
    stores = ([_on_off(x, "--datastores") for x in args.datastores.split(",")] if args.datastores
              else [cfg.spec_datastore is not None])
    if any(stores) and cfg.spec_datastore is None:
        raise ValueError("--datastores on: expected --spec-datastore PATH (the answers to draft from)")
    counts = _branch_counts(args.branches)
    plans = args.branch_plans.split(",") if args.branch_plans else []
    if not set(plans) <= set(BRANCH_PLANS):
        raise ValueError(f"--branch-plans {args.branch_plans!r}: expected plans of "
                         f"{BRANCH_PLANS}, comma-separated")
    for pol in policies:  # validates
        SpecPolicy(mode=pol)
    for conf in confs:
        SpecOptions(min_confidence=conf)
    heldout: dict[str, list[list[int]]] = {}
    held_samples = [s for s in read_samples(args.data) if s.split == "heldout"]
    for s in held_samples:
        heldout.setdefault(s.source, []).append(list(s.input_ids[: s.prompt_len]))
    store = None
    if any(stores):  # read once: for the cores, and for the check that no timed answer is in it
        answers = list(read_answers(cfg.spec_datastore))
        store = TokenDatastore.from_answers(answers, cfg.spec_datastore)
        no_scored_answers_in(Path(cfg.spec_datastore), answers, held_samples)
    by_source = {source: spread(prompts, args.n) for source, prompts in heldout.items()}
    if not by_source:
        raise ValueError(f"{args.data}: no held-out samples")
    spec_cfg = replace(cfg, spec_block_size=max(blocks),
                       spec_branches=max(counts) if counts else cfg.spec_branches)
    spec_core = EngineCore(spec_cfg, datastore=store)
    spec_cores = {"main": spec_core}
    if args.peer_speculator:
        spec_cores["peer"] = EngineCore(replace(spec_cfg, speculator=args.peer_speculator),
                                        tokenizer=spec_core.tokenizer, datastore=store)
    # each core's speculation as built (the widest configuration's scratch KV and the stores)
    bases = {name: core.speculation for name, core in spec_cores.items()}
    plain_core = EngineCore(replace(cfg, speculator="none", spec_datastore=None),
                            tokenizer=spec_core.tokenizer)
    hf = None
    if not args.no_transformers:
        from transformers import AutoModelForCausalLM

        hf = AutoModelForCausalLM.from_pretrained(cfg.model_dir, dtype=cfg.torch_dtype).to(cfg.device).eval()
    eos = spec_core.tokenizer.eos_token_id
    warm = next(iter(by_source.values()))[0]
    decode_one(plain_core, warm, 4, None)
    for core in spec_cores.values():
        decode_one(core, warm, 4, max(blocks))
    if hf is not None:
        _run_hf(hf, warm, 4, eos, None)
    confs = confs or [bases["main"].options.min_confidence]  # the engine's defaults
    lookups = lookups or [bases["main"].options.lookup]
    counts = counts or [bases["main"].options.branches]
    plans = plans or [cfg.spec_branch_plan]
    configs = [(pol, b, c, lk, n, plan, ds, d) for pol in policies for b in blocks for c in confs
               for lk in lookups for n in counts for plan in (plans if n > 1 else plans[:1])
               for ds in (stores if n > 1 else [False]) for d in spec_cores]
    if args.warm_pass == "on" or (args.warm_pass == "auto" and cfg.device.startswith("cuda")):
        for prompts in by_source.values():
            for p in prompts:
                _engine_runs(plain_core, spec_cores, p, args.max_new_tokens,
                             _states(configs, bases, cfg.max_batch))
    compiles0 = compiled_variants()
    passes = [_timed_pass(plain_core, spec_cores, hf, by_source, configs, bases, args, eos)
              for _ in range(args.repeat)]
    rows = []
    for source, prompts in sorted(by_source.items()):
        acc = {name: _merged([p[source][name] for p in passes]) for name in passes[0][source]}
        base = acc["plain"].result()
        row = {"source": source, "prompts": len(prompts), "passes": args.repeat,
               "turnspec_plain_tok_s": base["tok_s"], "spec": []}
        if args.repeat > 1:
            row["plain_tok_s_per_pass"] = [p[source]["plain"].result()["tok_s"] for p in passes]
        for c in configs:
            r = acc[c].result()
            row["spec"].append({"policy": c[0], "block": c[1], "min_confidence": c[2], "lookup": c[3],
                                "branches": c[4], "plan": c[5], "datastore": c[6],
                                "drafter": c[7],
                                "tok_s": r["tok_s"], "tau": r["tau"], "tau_ci90": r["tau_ci90"],
                                "spec_share": r["spec_share"], "speedup": r["tok_s"] / base["tok_s"],
                                "identical": acc[c].tokens == acc["plain"].tokens})
            if args.repeat > 1:
                per_pass = [p[source][c].result()["tok_s"] / p[source]["plain"].result()["tok_s"]
                            for p in passes]
                row["spec"][-1].update(speedup_per_pass=per_pass, speedup_median=median(per_pass))
        if hf is not None:
            row["transformers_tok_s"] = acc["hf"].result()["tok_s"]
            row["prompt_lookup_tok_s"] = acc["lookup"].result()["tok_s"]
        rows.append(row)
    compiles = compiled_variants()
    record = {"bench": "spec", "date": date.today().isoformat(), "device": cfg.device,
              # Triton variants compiled inside the timed pass (None: no compiled kernels ran)
              "triton_compiles_timed": compiles - compiles0
              if cfg.device.startswith("cuda") and compiles is not None else None,
              "cpu": cpu_name() if cfg.device == "cpu" else None,
              "cpu_gemm_plan": describe_gemm_plan(plain_core.model),
              "dtype": str(cfg.torch_dtype).removeprefix("torch."), "threads": torch.get_num_threads(),
              "speculator": cfg.speculator, "peer_speculator": args.peer_speculator,
              "max_new_tokens": args.max_new_tokens, "rows": rows}
    for row in rows:
        best = max(row["spec"], key=lambda x: x["tok_s"])
        row["best"] = {k: best[k] for k in ("policy", "block", "min_confidence", "lookup",
                                            "branches", "plan", "drafter", "datastore")}
    print_table(record)
    with open(args.json, "w") as f:
        json.dump(record, f, indent=2)
    print(f"wrote {args.json}")
    return 0


def spread(items: list, n: int) -> list:
    """n items evenly spaced over the list, first included (all of it when n >= its length).
    Datagen writes samples shortest answer first, so the first n would be the n shortest."""
    if n < 1:
        raise ValueError(f"--n {n}: expected at least one prompt per source")
    if n >= len(items):
        return list(items)
    return [items[i * len(items) // n] for i in range(n)]


def _timed_pass(plain_core, spec_cores: dict[str, object], hf, by_source: dict[str, list[list[int]]],
                configs: list, bases: dict[str, Speculation], args: argparse.Namespace,
                eos: int) -> dict[str, dict]:
    """One timed pass: per source, per configuration ("plain", each config, "hf", "lookup"),
    its totals. Interleaved per prompt (plain, every spec config, transformers, prompt-lookup),
    so a machine that slows down or speeds up mid-run shifts every configuration alike.
    `bases`: each spec core's own speculation (`_states`)."""
    out = {}
    for source, prompts in sorted(by_source.items()):
        acc = {name: ConfigTotals() for name in ["plain", *configs, "hf", "lookup"]}
        # fresh per-config step times
        states = _states(configs, bases, plain_core.cfg.max_batch)
        for p in prompts:
            runs = _engine_runs(plain_core, spec_cores, p, args.max_new_tokens, states)
            for name, r in zip(["plain", *configs], runs, strict=True):
                acc[name].add(*r)
            if hf is not None:
                acc["hf"].add(*_run_hf(hf, p, args.max_new_tokens, eos, None))
                acc["lookup"].add(*_run_hf(hf, p, args.max_new_tokens, eos, args.lookup_tokens))
        out[source] = acc
    return out


def _merged(accs: list[ConfigTotals]) -> ConfigTotals:
    """One configuration's totals over several passes."""
    m = ConfigTotals()
    for a in accs:
        m.tokens += a.tokens
        m.secs, m.steps, m.committed = m.secs + a.secs, m.steps + a.steps, m.committed + a.committed
    return m


def print_table(r: dict) -> None:
    w = max([9, *(len(row["source"]) + 1 for row in r["rows"])])  # the source column
    hdr = (f"{'source':<{w}}{'config':<44}{'tok/s':>9}{'tau':>7}{'90% CI':>12}{'spec tok':>9}"
           f"{'vs plain':>10}{'identical':>11}")
    print(f"\n{' turnspec bench spec ':=^{len(hdr)}}")
    cpu = f" ({r['cpu']})" if r.get('cpu') else ""
    peer = f", peer {r['peer_speculator']}" if r.get("peer_speculator") else ""
    print(f"device {r['device']}{cpu} {r['dtype']} threads {r['threads']}  drafter {r['speculator']}{peer}")
    if r.get("cpu_gemm_plan"):
        print(f"cpu fp32 GEMM per row bucket {r['cpu_gemm_plan']}")
    if r.get("triton_compiles_timed"):
        print(f"WARNING: {r['triton_compiles_timed']} Triton kernel variants compiled inside the "
              "timed pass: the configurations that met them first carry their compile time")
    print(hdr)
    print("-" * len(hdr))
    for row in r["rows"]:
        base = row["turnspec_plain_tok_s"]
        print(f"{row['source']:<{w}}{'turnspec, no spec':<44}{base:>9.2f}{'':>28}{1.0:>9.2f}x")
        for x in row["spec"]:
            tau = f"{x['tau']:.2f}" if x["tau"] is not None else "-"
            share = f"{100 * x['spec_share']:.0f}%" if x["spec_share"] is not None else "-"
            ci = format_interval(x.get("tau_ci90"))
            name = f"DFlash {_config_label(x)}"
            print(f"{'':<{w}}{name:<44}{x['tok_s']:>9.2f}{tau:>7}{ci:>12}{share:>9}{x['speedup']:>9.2f}x"
                  f"{str(x['identical']):>11}")
        if "transformers_tok_s" in row:
            for name, key in (("transformers", "transformers_tok_s"), ("tf prompt-lookup", "prompt_lookup_tok_s")):
                print(f"{'':<{w}}{name:<44}{row[key]:>9.2f}{'':>28}{row[key] / base:>9.2f}x")
        print(f"{'':<{w}}best: {_config_label(row['best'])}")
        if row.get("passes", 1) > 1:
            best = next(x for x in row["spec"] if _config_label(x) == _config_label(row["best"]))
            per = " ".join(f"{v:.2f}x" for v in best["speedup_per_pass"])
            print(f"{'':<{w}}{row['passes']} passes: no spec tok/s "
                  f"{' '.join(f'{v:.2f}' for v in row['plain_tok_s_per_pass'])}; best per pass "
                  f"{per}, median {best['speedup_median']:.2f}x")
    print("=" * len(hdr))
