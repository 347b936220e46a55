"""τ by verify branches: the drafter's tau-by-branches.json, which `--spec-width measured`
weighs against the verify cost it times at start-up (engine/local/verify_cost.py).

usage: python scripts/analysis/tau_curve.py --data SAMPLES --split NAME [--drafter DIR]
           [--branches 1,2,4,8,16] [--samples N] [--device cpu] [--out DIR/tau-by-branches.json]

One `turnspec speculator eval --lookup --branches b --branch-plan planned` a branch count (the
offline replay that commits what the engine commits; full blocks, as on CUDA), τ of `--split`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def tau_at(branches: int, args: argparse.Namespace) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "eval.json"
        cmd = [sys.executable, "-m", "turnspec.cli.main", "speculator", "eval", "--data", args.data,
               "--drafter", args.drafter, "--lookup", "--branches", str(branches),
               "--branch-plan", "planned", "--device", args.device, "--json", str(out)]
        if args.samples:
            cmd += ["--samples", str(args.samples)]
        subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        taus = json.loads(out.read_text())["tau"]
    name = f"{args.split}+lookup" + (f"+{branches}br+planned" if branches > 1 else "")
    if name not in taus:
        raise SystemExit(f"no split {name!r} in the eval's output; it has {sorted(taus)}")
    return float(taus[name])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True)
    p.add_argument("--split", required=True, help="e.g. independent-voice")
    p.add_argument("--drafter", default="default")
    p.add_argument("--branches", default="1,2,4,8,16")
    p.add_argument("--samples", type=int, default=None, help="turns a split (default: all)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--out", type=Path, default=ROOT / "models/assets/smollm2-dflash/tau-by-branches.json")
    args = p.parse_args()
    counts = [int(b) for b in args.branches.split(",")]
    taus = []
    for b in counts:
        taus.append(tau_at(b, args))
        print(f"{b} branches: tau {taus[-1]:.3f}", flush=True)
    doc = {"branches": counts, "tau": taus, "split": args.split, "data": args.data,
           "samples": args.samples, "drafter": args.drafter, "device": args.device,
           "command": "python scripts/analysis/tau_curve.py " + " ".join(sys.argv[1:])}
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
