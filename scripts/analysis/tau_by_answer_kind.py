"""τ of one split split by what the target answered: a tool call, an invented tool result, talk
about calling a function, or plain speech; and by what came before (the caller, a tool result).

usage: python scripts/analysis/tau_by_answer_kind.py SAMPLES.jsonl TAU.json [TAU.json ...]
           [--split independent-voice] [--block 16] [--json OUT] [--model DIR]

SAMPLES.jsonl is the data `speculator eval --data` read (e.g. the eval set's answers from
`scripts/gpu/broad.sh train`, `evalset/samples.jsonl` in broad-train.tgz), TAU.json what its
`--json` wrote. The JSON's per-turn rows carry no ids, so this rebuilds their order as
`speculator eval` makes it (eval_splits' spread, then tau.replay_order) and
refuses to go on unless every row's token count matches its turn's answer.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

from turnspec.engine.chat import ChatTemplate
from turnspec.engine.local.args import resolve_model_dir
from turnspec.speculator.data import Sample, read_samples
from turnspec.speculator.tau import replay_order
from turnspec.speculator.train_io import eval_splits

CALLING = re.compile(r"<tool_call>|call the function|function_name|\"type\": ?\"function\"")


def answer_kind(answer: str) -> str:
    if answer.lstrip().startswith("<tool_call>"):
        return "tool call"
    if "<tool_response>" in answer:
        return "invents a tool result"
    if CALLING.search(answer):
        return "talks about calling"
    return "spoken"


def ordered(samples: list[Sample], split: str, n: int, max_len: int = 2048) -> list[Sample]:
    """The turns of `split` in the order of `speculator eval`'s rows (NAME+lookup: NAME's turns,
    replayed in the same order by `speculator eval --lookup`)."""
    split = split.removesuffix("+lookup")
    splits = eval_splits(samples, n)
    if split not in splits:
        raise SystemExit(f"split {split!r}: not in these samples; expected one of {sorted(splits)}")
    return replay_order(splits[split], max_len)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("samples")
    ap.add_argument("tau_json", nargs="+")
    ap.add_argument("--split", default="independent-voice")
    ap.add_argument("--block", default="16")
    ap.add_argument("--json", default=None, help="write the table as JSON here")
    ap.add_argument("--model", default=None, help="the target's folder (default: SmolLM2)")
    args = ap.parse_args()
    chat = ChatTemplate.from_model_dir(resolve_model_dir(args.model))
    samples = read_samples(args.samples)
    out: dict[str, dict] = {}
    for path in args.tau_json:
        res = json.loads(Path(path).read_text())["by_block"][args.block]["eval"][args.split]
        turns = ordered(samples, args.split, res["samples"])
        if len(turns) != len(res["rows"]):
            raise SystemExit(f"{path}: {len(res['rows'])} rows for {len(turns)} turns; expected the "
                             "samples that eval read")
        agg: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        for s, (tokens, steps) in zip(turns, res["rows"], strict=True):
            p = s.prompt_len
            if abs((len(s.input_ids) - p) - tokens) > 1:
                raise SystemExit(f"{path}: row of {tokens} tokens against a {len(s.input_ids) - p}"
                                 f"-token answer ({s.id}): the rows are not in this order")
            prompt = chat.tokenizer.decode(list(s.input_ids[:p]))
            after = "after a tool result" if "</tool_response>" in prompt[-120:] else "after the caller"
            for key in ("all", answer_kind(chat.tokenizer.decode(list(s.input_ids[p:]))), after):
                a = agg[key]
                a[0], a[1], a[2] = a[0] + tokens, a[1] + steps, a[2] + 1
        n = len(turns)
        out[path] = {k: {"turns": c, "share": round(c / n, 3), "tau": round(t / st, 3),
                         "tokens_per_turn": round(t / c, 1)} for k, (t, st, c) in agg.items()}
        print(f"== {path}: {args.split}, B={args.block}")
        print(f"{'kind':24s} {'turns':>6s} {'share':>6s} {'tau':>6s} {'tok/turn':>9s}")
        for k, v in sorted(out[path].items(), key=lambda kv: -kv[1]["turns"]):
            print(f"{k:24s} {v['turns']:6d} {v['share']:6.0%} {v['tau']:6.2f} "
                  f"{v['tokens_per_turn']:9.0f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
