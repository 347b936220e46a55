"""`turnspec bench load`: how long `speculator train` takes to read and pack its data, before
its first step, with the old single-process path (`read_samples` + `PackedSplit.build`) side
by side with the worker-process loader (`speculator/data_load.py`) at each worker count; checks
that both pack the same rows (table + JSON)."""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from datetime import date
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("load", help="training-data loading: serial vs worker processes")
    p.add_argument("--data", required=True, type=Path, help="datagen folder or .jsonl[.xz|.gz]")
    p.add_argument("--workers", default="1,2", help="worker counts, comma-separated")
    p.add_argument("--max-len", type=int, default=2048)
    p.add_argument("--json", default="bench-load.json")
    p.set_defaults(func=run)


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return sum(x.ru_utime + x.ru_stime for x in r)


def run(args: argparse.Namespace) -> int:
    import torch

    from turnspec.speculator.data import PackedSplit, read_samples
    from turnspec.speculator.data_load import load_train_data

    counts = [int(w) for w in args.workers.split(",")]
    if not counts or min(counts) < 1:
        raise ValueError(f"--workers {args.workers!r}: expected positive counts, e.g. 1,2")
    rows = []
    t, c = time.perf_counter(), _cpu_s()
    samples = read_samples(args.data)
    want = PackedSplit.build([s for s in samples if s.split == "train"], args.max_len, "cpu")
    rows.append({"loader": "read_samples + PackedSplit.build", "workers": 1,
                 "seconds": time.perf_counter() - t, "cpu_s": _cpu_s() - c, "identical": True})
    del samples
    for w in counts:
        t, c = time.perf_counter(), _cpu_s()
        got = load_train_data(args.data, args.max_len, "cpu", workers=w)
        secs, cpu = time.perf_counter() - t, _cpu_s() - c
        same = (torch.equal(got.train.ids, want.ids) and torch.equal(got.train.loss_mask,
                                                                     want.loss_mask)
                and got.train.lengths == want.lengths and got.train.spans == want.spans)
        rows.append({"loader": "load_train_data", "workers": w, "seconds": secs, "cpu_s": cpu,
                     "identical": same})
        del got
    base = rows[0]["seconds"]
    print(f"{len(want)} train rows, {want.num_tokens()} tokens; {os.cpu_count()} cores")
    print(f"{'loader':<36}{'workers':>8}{'seconds':>10}{'cpu s':>9}{'speedup':>9}  identical")
    for r in rows:
        r["speedup"] = base / r["seconds"]
        print(f"{r['loader']:<36}{r['workers']:>8}{r['seconds']:>10.1f}{r['cpu_s']:>9.1f}"
              f"{r['speedup']:>8.2f}x  {r['identical']}")
    record = {"bench": "load", "date": date.today().isoformat(), "data": str(args.data),
              "train_rows": len(want), "train_tokens": want.num_tokens(),
              "cores": os.cpu_count(), "max_len": args.max_len, "rows": rows}
    with open(args.json, "w") as f:
        json.dump(record, f, indent=2)
    print(f"wrote {args.json}")
    return 0 if all(r["identical"] for r in rows) else 1
