"""`turnspec bench cpu-gemm`: decode tok/s of the embedded engine on CPU with each fp32 GEMM
backend fixed for 1..32 rows, and with the plan measured at load (`--cpu-gemm auto`, the
default), beside transformers `generate` on the same prompts, greedy, in one process.

Passes interleave the configurations (one engine, its linears' plan swapped between runs), so
a machine that drifts during the run moves them all; the median pass is reported. Outputs of
every configuration are checked token-identical to the measured plan's first (table + JSON).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import date

import torch

from turnspec.benchmarks.host import cpu_name
from turnspec.engine.local.args import add_engine_args, engine_config_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("cpu-gemm", help="CPU decode tok/s per fp32 GEMM backend vs the "
                                               "measured plan vs transformers")
    add_engine_args(p)
    p.add_argument("--prompts", type=int, default=4, help="voice prompts, one after another")
    p.add_argument("--batch", type=int, default=8,
                   help="also decode this many prompts at once (0: skip; default: %(default)s)")
    p.add_argument("--max-new-tokens", type=int, default=48)
    p.add_argument("--repeat", type=int, default=3, help="interleaved passes (median reported)")
    p.add_argument("--json", default="bench-cpu-gemm.json")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from transformers import AutoModelForCausalLM

    from turnspec.benchmarks import runs as B
    from turnspec.engine.chat import ChatTemplate
    from turnspec.engine.local.core import EngineCore
    from turnspec.engine.model.cpu_gemm_plan import GemmPlan
    from turnspec.engine.model.cpu_linear import cpu_gemm_backends, gemm_plan, use_gemm_plan

    cfg = engine_config_from_args(args)
    if cfg.device != "cpu" or cfg.torch_dtype != torch.float32 or cfg.cpu_gemm != "auto":
        raise SystemExit("bench cpu-gemm: expected --device cpu, fp32 and --cpu-gemm auto "
                         f"(got {cfg.device}, {cfg.torch_dtype}, {cfg.cpu_gemm})")
    if args.repeat < 1 or args.prompts < 1 or args.batch < 0:
        raise SystemExit("bench cpu-gemm: expected --repeat >= 1, --prompts >= 1, --batch >= 0")
    t = time.perf_counter()
    core = EngineCore(cfg)
    load_s = time.perf_counter() - t
    measured = gemm_plan(core.model)
    if measured is None:
        raise SystemExit("bench cpu-gemm: no packed fp32 linears (torch without MKL?)")
    chat = ChatTemplate.from_model_dir(cfg.model_dir, core.tokenizer)
    prompts = [chat.render([{"role": "user", "content": u}]) for u in B.VOICE_PROMPTS]
    seq, batch = prompts[: args.prompts], prompts[: args.batch]
    hf = AutoModelForCausalLM.from_pretrained(cfg.model_dir, dtype=torch.float32).eval()
    eos = core.tokenizer.eos_token_id
    n = args.max_new_tokens
    plans = {"measured plan": measured, **{b: GemmPlan.fixed(b) for b in cpu_gemm_backends()}}
    B.run_core(core, seq[:1], 4, concurrent=False)           # warm-up (allocations, pools)
    B.run_hf(hf, seq[:1], 4, eos)
    tps: dict[str, dict[str, list[float]]] = {k: {"seq": [], "batch": []} for k in [*plans, "hf"]}
    tokens: dict[str, list[list[int]]] = {}
    for _ in range(args.repeat):
        for name, plan in plans.items():
            use_gemm_plan(core.model, plan)
            B.clear_prefix_cache(core)
            r = B.run_core(core, seq, n, concurrent=False)
            tps[name]["seq"].append(sum(map(len, r.tokens)) / sum(r.seconds))
            tokens.setdefault(name, r.tokens)
            if batch:
                B.clear_prefix_cache(core)
                t = time.perf_counter()
                rb = B.run_core(core, batch, n, concurrent=True)
                tps[name]["batch"].append(sum(map(len, rb.tokens)) / (time.perf_counter() - t))
        r = B.run_hf(hf, seq, n, eos)
        tps["hf"]["seq"].append(sum(map(len, r.tokens)) / sum(r.seconds))
        tokens.setdefault("hf", r.tokens)
    use_gemm_plan(core.model, measured)
    ref = tokens["measured plan"]
    rows = [{"config": name, "seq_tok_s": statistics.median(v["seq"]), "seq_passes": v["seq"],
             "batch_tok_s": statistics.median(v["batch"]) if v["batch"] else None,
             "identical": tokens[name] == ref} for name, v in tps.items()]
    record = {"bench": "cpu-gemm", "date": date.today().isoformat(), "cpu": cpu_name(),
              "threads": torch.get_num_threads(), "model": cfg.model_dir, "max_new_tokens": n,
              "prompts": len(seq), "batch": len(batch), "repeat": args.repeat,
              "engine_load_s": load_s, "plan": measured.describe(),
              "plan_measured_ms": [dict(m) for m in measured.measured_ms], "rows": rows}
    print_table(record)
    with open(args.json, "w") as f:
        json.dump(record, f, indent=2)
    print(f"wrote {args.json}")
    return 0 if all(r["identical"] for r in rows) else 1


def print_table(r: dict) -> None:
    print(f"\n{' turnspec bench cpu-gemm ':=^78}")
    print(f"{r['cpu']}, {r['threads']} threads, {r['prompts']} prompts x {r['max_new_tokens']} "
          f"tokens, median of {r['repeat']} interleaved passes; "
          f"engine load {r['engine_load_s']:.1f} s")
    print(f"measured plan (rows <= bound: backend) {r['plan']}")
    base = next(x for x in r["rows"] if x["config"] == "hf")["seq_tok_s"]
    print(f"{'config':<16}{'tok/s conc. 1':>14}{'vs transformers':>17}"
          f"{'tok/s batch ' + str(r['batch']):>16}{'identical':>12}")
    for x in r["rows"]:
        name = "transformers" if x["config"] == "hf" else x["config"]
        bt = f"{x['batch_tok_s']:.2f}" if x["batch_tok_s"] is not None else ""
        print(f"{name:<16}{x['seq_tok_s']:>14.2f}{x['seq_tok_s'] / base:>16.2f}x{bt:>16}"
              f"{str(x['identical']):>12}")
    print("=" * 78)
