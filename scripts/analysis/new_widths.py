"""How many batch widths a training run meets for the first time, step by step.

usage: python scripts/analysis/new_widths.py SAMPLES.jsonl [--sequences 325000] [--multiple 1]

Draws --sequences lengths from the train samples of a rebuilt seed (`turnspec speculator
unpack-responses ... --out DIR`, then DIR/samples.jsonl), plans one epoch with
`PackedSplit.batches` itself (64 rows a batch, the trainer's seed 0), and prints the widths not
seen before per 100 steps. H200 step times fit 0.22 s + 0.11 s per new width
(docs/history/notes/run17-fast-load.md).
"""

from __future__ import annotations

import argparse
import json
import random

import torch

from turnspec.speculator.data import PackedSplit, open_text


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("samples")
    p.add_argument("--sequences", type=int, default=325_000)
    p.add_argument("--multiple", type=int, default=1, help="round widths up to this")
    p.add_argument("--steps", type=int, default=3600)
    p.add_argument("--max-len", type=int, default=2048)
    args = p.parse_args()
    with open_text(args.samples) as f:
        lens = [min(len(r["input_ids"]), args.max_len) for r in map(json.loads, f)
                if r["split"] == "train"]
    rng = random.Random(0)
    drawn = [rng.choice(lens) for _ in range(args.sequences)]
    # only the lengths matter to the plan: no rows of ids are held
    empty = torch.empty((0, args.max_len), dtype=torch.int64)
    split = PackedSplit(empty, empty.bool(), drawn, 0, [0] * len(drawn))
    seen: set[int] = set()
    new = 0
    batches = split.batches(64, torch.Generator().manual_seed(0), args.multiple)
    for step, batch in enumerate(batches, 1):
        if step > args.steps:
            break
        new += batch.width not in seen
        seen.add(batch.width)
        if step % 100 == 0:
            print(json.dumps({"step": step, "new_widths": new, "seen": len(seen)}))
            new = 0


if __name__ == "__main__":
    main()
