"""`turnspec speculator magpie`: broad prompts written by the target (speculator/magpie.py), to
answer with `speculator datagen --from-conversations DIR` and pre-train a drafter on."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from turnspec.speculator.datagen_target import ENGINES


def add_magpie(sub: argparse._SubParsersAction) -> None:
    m = sub.add_parser("magpie", help="broad user lines sampled from the target itself (Magpie), "
                       "as conversations for datagen --from-conversations")
    m.add_argument("--out", required=True, type=Path,
                   help="folder: conversations-000001.jsonl and magpie.json (stats)")
    m.add_argument("--conversations", type=int, required=True)
    m.add_argument("--seed", type=int, default=0, help="settings and which conversations go on")
    m.add_argument("--max-user-turns", type=int, default=2)
    m.add_argument("--more-turns-frac", type=float, default=0.3,
                   help="share of (tool-less) conversations answered and given another user line "
                        "after each turn (default: %(default)s)")
    m.add_argument("--tools-frac", type=float, default=None,
                   help="share of settings that offer random tools (default: 0.2)")
    m.add_argument("--temperature", type=float, default=1.0)
    m.add_argument("--top-p", type=float, default=0.95)
    m.add_argument("--max-user-tokens", type=int, default=96,
                   help="a user line not finished within this many tokens is dropped")
    m.add_argument("--max-answer-tokens", type=int, default=192)
    m.add_argument("--engine", choices=ENGINES, default="local")
    from turnspec.engine.local.args import add_engine_args
    from turnspec.engine.sglang_args import add_sglang_args

    add_engine_args(m)
    add_sglang_args(m)
    m.set_defaults(func=run_magpie, feed=None, admit_min_free=None, tool_grammar=None)


def run_magpie(args: argparse.Namespace) -> int:
    from turnspec.engine.chat import ChatTemplate
    from turnspec.speculator import magpie
    from turnspec.speculator.datagen_target import make_target
    from turnspec.workloads.catalog import LATEST_WORKLOAD

    try:
        cfg = magpie.MagpieConfig(
            conversations=args.conversations, seed=args.seed, max_user_turns=args.max_user_turns,
            more_turns_frac=args.more_turns_frac, tools_frac=args.tools_frac,
            temperature=args.temperature, top_p=args.top_p, max_user_tokens=args.max_user_tokens,
            max_answer_tokens=args.max_answer_tokens)
    except ValueError as e:
        raise SystemExit(f"speculator magpie: {e}") from None
    target = make_target(args)
    chat = ChatTemplate.from_model_dir(target.model_dir)
    t0 = time.perf_counter()
    target.load(LATEST_WORKLOAD)
    load_s = time.perf_counter() - t0
    try:
        records, stats = magpie.generate(cfg, chat, target.sample, set(chat.stop_token_ids))
    finally:
        target.close()
    path = magpie.write(records, stats, cfg, args.out)
    print(f"wrote {len(records)} conversations to {path}", file=sys.stderr)
    print(json.dumps({"engine": target.name, "engine_load_s": round(load_s, 1),
                      "generate_s": round(time.perf_counter() - t0 - load_s, 1),
                      **stats.as_dict()}))
    return 0
