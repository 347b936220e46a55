"""What the target answers on the workload generator's held-out tool turns, by kind
(tau_by_answer_kind.answer_kind): a quick look on any machine, no drafter involved.

usage: python scripts/analysis/answer_kinds_probe.py [--prompts 40] [--seed 19] [--workload 2]
           [--max-new-tokens 96] [the embedded engine's flags: --model, --threads, --device, ...]

Renders held-out tool turns as datagen does (speculator/prompts.py), answers them greedily
with the embedded engine and prints how many answers are a tool call, an invented tool
result, talk about calling, or speech, with the first few answers.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections import Counter
from pathlib import Path

from turnspec.engine.chat import ChatTemplate
from turnspec.engine.local import LocalEngine
from turnspec.engine.local.args import add_engine_args, engine_config_from_args
from turnspec.engine.protocol import SamplingParams
from turnspec.speculator.prompts import build_prompt_items

_spec = importlib.util.spec_from_file_location(
    "tau_by_answer_kind", Path(__file__).with_name("tau_by_answer_kind.py"))
kinds = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kinds)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prompts", type=int, default=40)
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--workload", type=int, default=2)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    add_engine_args(ap)
    args = ap.parse_args()
    engine = LocalEngine(engine_config_from_args(args))
    chat = ChatTemplate.from_model_dir(engine.cfg.model_dir)
    items, _ = build_prompt_items(chat.render_many, tool_conversations=0,
                                  heldout_conversations=max(1, args.prompts // 3), generic=0,
                                  seed=args.seed, workload=args.workload)
    items = [it for it in items if it.source == "tools"][: args.prompts]
    engine.load()
    outs = engine.generate_batch([list(it.prompt_ids) for it in items],
                                 SamplingParams(temperature=0.0, max_tokens=args.max_new_tokens))
    stop = set(chat.stop_token_ids)
    answers = [chat.tokenizer.decode([t for t in o if t not in stop]) for o in outs]
    counts = Counter(kinds.answer_kind(a) for a in answers)
    print(f"{len(items)} held-out tool turns (seed {args.seed}, workload {args.workload}):")
    for kind, n in counts.most_common():
        print(f"  {kind:24s} {n:4d}  {n / len(items):5.0%}")
    for a in answers[:5]:
        print("  e.g.", repr(a[:140]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
