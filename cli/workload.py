"""`turnspec workload ...`: export the synthetic voice-agent workload as JSONL, or print its stats.

    turnspec workload export --out convs.jsonl [--n 5000] [--seed 0] [--split train|heldout|all] [--workload 2]
    turnspec workload export --out generic.jsonl --generic
    turnspec workload stats [--n 5000] [--seed 0] [--split all]
    turnspec workload render --out tokens.jsonl [--workload voice|FILE] [--conversations 40]
        [--no-tools] [--model DIR]   # + the prompt ids turnspec renders per turn
                                     # (benchmarks/same_tokens.py), for a peer on the same tokens
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from turnspec.workloads.catalog import LATEST_WORKLOAD, WORKLOADS


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("workload", help="synthetic voice-agent conversations (JSONL)")
    sub = parser.add_subparsers(dest="workload_command", required=True)
    export = sub.add_parser("export", help="write conversations (or --generic prompts) as JSONL")
    export.add_argument("--out", required=True, help="JSONL file to write")
    _add_shape_args(export)
    export.add_argument("--generic", action="store_true", help="write the generic chat prompts instead (no tools)")
    stats = sub.add_parser("stats", help="print counts per split, domain and next-turn kind")
    _add_shape_args(stats)
    render = sub.add_parser("render", help="the load test's conversations with the prompt token "
                            "ids turnspec renders for each turn (for loadtest --url .../generate)")
    render.add_argument("--out", required=True, help="JSONL file to write")
    render.add_argument("--workload", dest="source", default="voice",
                        help="voice (the load test's voice stream) or a workload JSONL file "
                        "(default: voice)")
    render.add_argument("--conversations", type=int, default=40,
                        help="how many, from the start (default: %(default)s)")
    render.add_argument("--seed", type=int, default=0, help="the voice stream's seed")
    render.add_argument("--max-tokens", type=int, default=96,
                        help="per turn, as loadtest --max-tokens (default: %(default)s)")
    render.add_argument("--no-tools", action="store_true",
                        help="render without the tools in the prompt (loadtest --tool-mode none)")
    render.add_argument("--model", default=None,
                        help="model folder whose chat template renders (default: SmolLM2)")
    render.set_defaults(func=run_render)
    parser.set_defaults(func=run)


def _add_shape_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n", type=int, default=None,
                        help="number of conversations (default 5000; with --generic: all prompts)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--split", choices=("train", "heldout", "all"), default="all",
                        help="train or held-out scenarios only, or all (default)")
    parser.add_argument("--workload", type=int, choices=WORKLOADS, default=LATEST_WORKLOAD,
                        help="workload version: 2 adds 40 train goals (default: %(default)s)")


def run(args: argparse.Namespace) -> int:
    from turnspec.workloads import (
        export_jsonl,
        generate_conversations,
        generic_prompts,
        turns_for_prompting,
    )

    start = time.perf_counter()
    if args.workload_command == "export" and args.generic:
        conversations = generic_prompts(args.n)
    else:
        n = 5000 if args.n is None else args.n
        conversations = generate_conversations(n, seed=args.seed, split=args.split, workload=args.workload)
    elapsed = time.perf_counter() - start
    if args.workload_command == "export":
        count = export_jsonl(conversations, args.out)
        print(f"wrote {count} records to {args.out} ({elapsed:.2f} s to generate)")
        return 0
    turns = Counter(t.kind for t in turns_for_prompting(conversations))
    print(f"{len(conversations)} conversations in {elapsed:.2f} s (seed {args.seed}, split {args.split}, "
          f"workload {args.workload})")
    for title, counter in (("split", Counter(c.split for c in conversations)),
                           ("domain", Counter(c.domain for c in conversations)), ("next turn", turns)):
        print(f"  {title:<10} " + "  ".join(f"{k}={v}" for k, v in sorted(counter.items())))
    print(f"  scenarios  {len({c.scenario for c in conversations})}")
    return 0


def run_render(args: argparse.Namespace) -> int:
    from pathlib import Path

    from turnspec.benchmarks.same_tokens import render_file, scripts_from
    from turnspec.engine.chat import ChatTemplate
    from turnspec.engine.local.args import resolve_model_dir

    if args.conversations < 1 or args.max_tokens < 1:
        raise ValueError("--conversations and --max-tokens must be >= 1")
    model_dir = resolve_model_dir(args.model)
    chat = ChatTemplate.from_model_dir(model_dir)
    start = time.perf_counter()
    convs, turns = render_file(chat, scripts_from(args.source, args.seed, args.max_tokens),
                               args.out, conversations=args.conversations,
                               tools_in_prompt=not args.no_tools, model=Path(model_dir).name)
    print(f"wrote {convs} conversations, {turns} turns with their prompt ids "
          f"({'no tools' if args.no_tools else 'tools in the prompt'}) to {args.out} "
          f"in {time.perf_counter() - start:.1f} s")
    return 0
