"""How many batch widths a training run meets for the first time, step by step.

usage: python scripts/analysis/new_widths.py SAMPLES.jsonl [--sequences 325000] [--multiple 1]

Draws --sequences lengths from the train samples of a rebuilt seed (`turnspec speculator
unpack-responses ... --out DIR`, then DIR/samples.jsonl), plans batches the way
`PackedSplit.batches` does (64 rows, sorted within windows of 32 batches, shuffled), and prints
the widths not seen before per 100 steps. Run 17's step times fit 0.22 s + 0.11 s per new
width (docs/notes/2026-12-01-run17-fast-load.md).
"""

from __future__ import annotations

import argparse
import json
import random


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("samples")
    p.add_argument("--sequences", type=int, default=325_000)
    p.add_argument("--multiple", type=int, default=1, help="round widths up to this")
    p.add_argument("--steps", type=int, default=3600)
    args = p.parse_args()
    with open(args.samples) as f:
        lens = [min(len(r["input_ids"]), 2048) for r in map(json.loads, f) if r["split"] == "train"]
    rng = random.Random(0)
    drawn = [rng.choice(lens) for _ in range(args.sequences)]
    order = list(range(len(drawn)))
    rng.shuffle(order)
    groups = []
    for w in range(0, len(order), 32 * 64):
        chunk = sorted(order[w:w + 32 * 64], key=drawn.__getitem__)
        groups += [chunk[j:j + 64] for j in range(0, len(chunk), 64)]
    rng.shuffle(groups)
    seen: set[int] = set()
    new = 0
    for step, rows in enumerate(groups[:args.steps], 1):
        width = -(-max(drawn[i] for i in rows) // args.multiple) * args.multiple
        new += width not in seen
        seen.add(width)
        if step % 100 == 0:
            print(json.dumps({"step": step, "new_widths": new, "seen": len(seen)}))
            new = 0


if __name__ == "__main__":
    main()
