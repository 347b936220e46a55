"""`turnspec bench tools`: held-out workload turns through the embedded engine with
grammar-constrained tool calls; counts valid calls per tool_choice mode (table + JSON)."""

from __future__ import annotations

import argparse
import json
import time
from datetime import date

from turnspec.engine.local.args import add_engine_args, engine_config_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("tools", help="tool-call validity on held-out turns (grammar on)")
    p.add_argument("--n", type=int, default=200, help="held-out turns per mode")
    p.add_argument("--modes", default="required,auto", help="tool_choice modes, comma-separated")
    p.add_argument("--max-tokens", type=int, default=384)
    p.add_argument("--json", default="bench-tools.json")
    add_engine_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from turnspec.benchmarks.tool_calls import CallEvalReport, score_output, select_turns
    from turnspec.benchmarks.tool_turns import load_core, run_turns

    cfg = engine_config_from_args(args)
    core, chat = load_core(cfg)
    record = {"bench": "tools", "date": date.today().isoformat(), "device": cfg.device,
              "max_tokens": args.max_tokens, "speculator": cfg.speculator, "modes": {}}
    ok = True
    for mode in args.modes.split(","):
        turns = select_turns(args.n, split="heldout", kind="tool_call" if mode == "required" else None)
        t0 = time.perf_counter()
        results = run_turns(core, chat, turns, mode, max_tokens=args.max_tokens)
        secs = time.perf_counter() - t0
        outcomes = [score_output(r.text, t, chat.tool_format) for t, r in zip(turns, results, strict=True)]
        report = CallEvalReport(mode, chat.tool_format.name, outcomes)
        kinds = {k: sum(o.kind == k for o in outcomes) for k in ("call", "text", "invalid", "truncated", "empty")}
        passed = kinds["call"] if mode == "required" else kinds["call"] + kinds["text"]
        ok &= passed == len(turns)
        record["modes"][mode] = {"turns": len(turns), "passed": passed, "kinds": kinds, "seconds": secs,
                                 "right_tool": sum(o.names[:1] == (o.expected_name,) for o in outcomes
                                                   if o.expected_name),
                                 "report": report.to_json()["summary"]}
        print(f"{mode:<10} {passed}/{len(turns)} pass  kinds={kinds}  {secs:.0f}s")
    with open(args.json, "w") as f:
        json.dump(record, f, indent=2)
    print(f"wrote {args.json}")
    return 0 if ok else 1
