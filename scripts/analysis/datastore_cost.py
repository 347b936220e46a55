"""Host cost of the datastore branch's draft (engine/spec/proposers/datastore.py, learning.py).

The answers in STORE are split in two: the first --learned-tokens tokens are learned by a
LearningDatastore, as `serve --spec-datastore-learn` would learn them, and the rest form a fixed
`--spec-datastore` store beside it. Queries are cut from the learned answers at random points,
so their matches are long, the expensive case. It prints µs per draft (one greedy row's) for the
learning store alone and beside the fixed one, and the time to index.

    python scripts/analysis/datastore_cost.py models/data/smollm2-dflash/responses-seed18.jsonl.xz \\
        --json /tmp/datastore-cost.json
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from turnspec.engine.spec.proposers.datastore import TokenDatastore, read_answers
from turnspec.engine.spec.proposers.learning import LearningDatastore


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("store", type=Path, help="answers: datagen samples or packed completions")
    p.add_argument("--learned-tokens", type=int, default=1_000_000)
    p.add_argument("--queries", type=int, default=2000)
    p.add_argument("--width", type=int, default=15, help="draft tokens (a B=16 block's drafts)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    learned, base, n = [], [], 0
    for a in read_answers(args.store):
        if n < args.learned_tokens:
            learned.append(a)
            n += len(a)
        else:
            base.append(a)
    t0 = time.perf_counter()
    fixed = TokenDatastore(base)
    index_fixed_s = time.perf_counter() - t0
    rng = random.Random(args.seed)
    long_answers = [a for a in learned if len(a) > 20]
    queries = []
    for _ in range(args.queries):
        a = rng.choice(long_answers)
        queries.append(a[:rng.randrange(3, len(a) - 1)])
    rows = []
    for beside in (None, fixed):
        store = LearningDatastore(beside, max_tokens=max(args.learned_tokens, 1024),
                                  background=False)
        t0 = time.perf_counter()
        for a in learned:
            store.learn(a)
        store.wait()
        learn_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        for q in queries:
            store.draft(q, args.width)
        us = (time.perf_counter() - t0) / len(queries) * 1e6
        rows.append({"learned_tokens": len(store.learned), "fixed_tokens": len(beside) if beside else 0,
                     "draft_us": us, "learn_all_s": learn_s})
    print(f"{'learned tokens':>15}{'fixed tokens':>14}{'µs a draft':>12}{'learn all, s':>14}")
    for r in rows:
        print(f"{r['learned_tokens']:>15,}{r['fixed_tokens']:>14,}{r['draft_us']:>12.0f}"
              f"{r['learn_all_s']:>14.1f}")
    print(f"index of the fixed store: {index_fixed_s:.1f} s")
    if args.json:
        args.json.write_text(json.dumps({"store": str(args.store), "queries": len(queries),
                                         "width": args.width, "rows": rows,
                                         "index_fixed_s": index_fixed_s}, indent=2) + "\n")


if __name__ == "__main__":
    main()
