"""Pool held-out τ over sets evaluated apart (one `turnspec speculator eval` JSON per seed).

usage: python scripts/analysis/pool_tau.py EVAL.json [EVAL.json ...] [--split tools-heldout]
           [--json OUT]

τ pooled = the sets' tokens over their verify steps (not a mean of per-set τ). Its 90%
interval: a bootstrap over every turn of every set when each JSON carries per-turn `rows`;
for older JSONs, from the per-set intervals as independent estimates, weighted by steps
(half-width sqrt(sum((w_i * h_i)^2)), the delta method for a ratio of sums), marked "approx".
e.g. run 22's pooled τ (docs/history/benchmarks-2026-12.md, "The default drafter", names RUN):
  python scripts/analysis/pool_tau.py docs/gpu-runs/RUN/tau_main_heldout-seed{7..14}.json
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from turnspec.speculator.tau import format_interval, tau_interval


def pool(evals: list[dict]) -> dict:
    """evals: one split's entry of each eval JSON (tau, tokens, steps, samples, ci90[, rows])."""
    if not evals:
        raise ValueError("pool: no sets given; expected at least one eval entry")
    tokens = sum(e["tokens"] for e in evals)
    steps = sum(e["steps"] for e in evals)
    if all(e.get("rows") for e in evals):
        rows = [r for e in evals for r in e["rows"]]
        ci = tau_interval([t for t, _ in rows], [n for _, n in rows])
        how = "bootstrap over turns"
    else:
        half = math.sqrt(sum((e["steps"] / steps * (e["ci90"][1] - e["ci90"][0]) / 2) ** 2
                             for e in evals))
        ci = (tokens / steps - half, tokens / steps + half)
        how = "approx, from the per-set intervals"
    return {"tau": tokens / steps, "tokens": tokens, "steps": steps,
            "samples": sum(e["samples"] for e in evals), "ci90": list(ci), "ci90_method": how}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("evals", nargs="+", type=Path, help="`turnspec speculator eval` JSON files")
    p.add_argument("--split", default="tools-heldout")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    entries = []
    for path in args.evals:
        found = json.loads(path.read_text()).get("eval", {})
        if args.split not in found:
            raise SystemExit(f"{path}: no {args.split!r} in its eval; it has {sorted(found)}")
        entries.append(found[args.split])
    print(f"{'set':<48} {'tau':>6} {'90% CI':>12} {'turns':>6} {'steps':>7}")
    for path, e in zip(args.evals, entries, strict=True):
        print(f"{str(path)[-48:]:<48} {e['tau']:>6.3f} {format_interval(e['ci90']):>12} "
              f"{e['samples']:>6} {e['steps']:>7}")
    pooled = pool(entries)
    print(f"{'pooled':<48} {pooled['tau']:>6.3f} {format_interval(pooled['ci90']):>12} "
          f"{pooled['samples']:>6} {pooled['steps']:>7}   ({pooled['ci90_method']})")
    if args.json:
        args.json.write_text(json.dumps({"split": args.split, "sets": [str(x) for x in args.evals],
                                         "pooled": pooled}, indent=2))


if __name__ == "__main__":
    main()
