"""CPU decode tok/s of two checkouts of turnspec, A/B in turn: `turnspec bench spec` run from
each, alternately, `--rounds` times, so drift in the machine's speed hits both alike; the
median over rounds of each source's speculative and plain tok/s, and B's over A's.

usage: python scripts/analysis/spec_ab.py A_DIR B_DIR [--rounds 3] [--out DIR] [-- BENCH_ARGS]

Each DIR is a checkout with its own `.venv` (make setup). Default bench arguments: the CPU
defaults (adaptive policy, lookup on, one branch, the confidence cut), B=16, 8 held-out prompts
a source, 64 new tokens, no transformers peers.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path
from statistics import median

BENCH = ["--blocks", "16", "--policies", "adaptive", "--n", "8", "--max-new-tokens", "64",
         "--no-transformers"]


def bench(checkout: Path, out: Path, extra: list[str]) -> dict:
    subprocess.run([str(checkout / ".venv/bin/turnspec"), "bench", "spec", *extra,
                    "--json", str(out)], cwd=checkout, check=True,
                   stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def row_of(run: dict, source: str) -> dict:
    """One bench run's row for `source`."""
    return next(r for r in run["rows"] if r["source"] == source)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("a", type=Path)
    p.add_argument("b", type=Path)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", type=Path, default=Path("/tmp/spec-ab"))
    p.add_argument("bench_args", nargs="*", default=None)
    args = p.parse_args()
    extra = args.bench_args or BENCH
    args.out.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[dict]] = {"a": [], "b": []}
    for i in range(args.rounds):
        for name, checkout in (("a", args.a), ("b", args.b)):
            runs[name].append(bench(checkout.resolve(), args.out / f"{name}-{i}.json", extra))
            print(f"round {i + 1} {name} done", flush=True)
    print(f"{'source':22} {'A spec':>9} {'B spec':>9} {'B/A':>6} {'A plain':>9} {'B plain':>9}")
    summary = {}
    for row in runs["a"][0]["rows"]:
        src = row["source"]
        spec = {n: [row_of(r, src)["spec"][0]["tok_s"] for r in runs[n]] for n in runs}
        plain = {n: median(row_of(r, src)["turnspec_plain_tok_s"] for r in runs[n]) for n in runs}
        a, b = median(spec["a"]), median(spec["b"])
        per_round = [y / x for x, y in zip(spec["a"], spec["b"], strict=True)]
        summary[src] = {"a_spec": a, "b_spec": b, "ratio": b / a, "ratio_per_round": per_round,
                        "a_plain": plain["a"], "b_plain": plain["b"]}
        print(f"{src:22} {a:9.2f} {b:9.2f} {b / a:6.3f} {plain['a']:9.2f} {plain['b']:9.2f}  "
              "per round " + " ".join(f"{x:.3f}" for x in per_round))
    (args.out / "summary.json").write_text(json.dumps({"a": str(args.a), "b": str(args.b),
                                                       "rounds": args.rounds, "bench": extra,
                                                       "sources": summary}, indent=2) + "\n")


if __name__ == "__main__":
    main()
