"""Compare drafters scored on the same turns: τ per split and block size, and each drafter's gain
over a baseline with a paired 90% interval (`speculator.tau.tau_difference_interval`).

usage: python scripts/analysis/arms_table.py DIR [--baseline default] [--json OUT]

DIR holds `turnspec speculator eval` JSONs named tau-ARM-SET.json, as `scripts/gpu/broad.sh
train` writes them (ARM: the drafter, SET: the data folder it was scored on). Every arm must have
been scored on the same turns: the script checks each turn's token count against the baseline's
and stops if they differ. The JSON keeps τ, its interval, the turns and the paired gain for every
(arm, split, block size); the per-turn rows stay in the eval JSONs.
e.g. the arms of a `broad.sh train` run, its broad-train.tgz unpacked in DIR:
  python scripts/analysis/arms_table.py DIR --json tau.json
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from turnspec.speculator.tau import format_interval, tau_difference_interval

NAME = re.compile(r"tau-(?P<arm>[^-]+)-(?P<set>.+)\.json$")


def load_arms(folder: Path) -> dict[str, dict[str, dict[str, dict]]]:
    """{arm: {block size: {split: eval entry}}} from every tau-ARM-SET.json in `folder`."""
    arms: dict[str, dict[str, dict[str, dict]]] = {}
    for path in sorted(folder.glob("tau-*.json")):
        m = NAME.match(path.name)
        if not m:
            continue
        found = json.loads(path.read_text())
        # one block size: eval writes that block's dict itself, not {"by_block": {...}}
        by_block = found["by_block"] if "by_block" in found else {str(found["block_size"]): found}
        for blk, run in by_block.items():
            arms.setdefault(m["arm"], {}).setdefault(blk, {}).update(run["eval"])
    if not arms:
        raise SystemExit(f"{folder}: no tau-ARM-SET.json files (expected broad.sh train's output)")
    return arms


def compare(arms: dict[str, dict[str, dict[str, dict]]], baseline: str) -> dict:
    """{arm: {split: {"B16": {tau, ci90, turns, gain, gain_ci90}}}}; the baseline's gain is 0."""
    if baseline not in arms:
        raise SystemExit(f"baseline {baseline!r} not among the arms found: {sorted(arms)}")
    out: dict = {}
    for arm, by_block in arms.items():
        for blk, splits in by_block.items():
            for split, e in splits.items():
                base = arms[baseline].get(blk, {}).get(split)
                row = {"tau": round(e["tau"], 3), "ci90": [round(x, 2) for x in e["ci90"]],
                       "turns": e["samples"]}
                if base is not None:
                    tokens = [t for t, _ in e["rows"]]
                    if tokens != [t for t, _ in base["rows"]]:
                        raise SystemExit(f"{arm} and {baseline} were scored on different turns of "
                                         f"{split} (B={blk}): expected the same answers in order")
                    row["gain"] = round(e["tau"] - base["tau"], 3)
                    row["gain_ci90"] = [round(x, 2) for x in tau_difference_interval(
                        tokens, [s for _, s in base["rows"]], [s for _, s in e["rows"]])]
                out.setdefault(arm, {}).setdefault(split, {})[f"B{blk}"] = row
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("folder", type=Path, help="a folder of tau-ARM-SET.json files")
    p.add_argument("--baseline", default="default", help="the arm the gains are against")
    p.add_argument("--block", default="16", help="the block size the table shows (all go to JSON)")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    table = compare(load_arms(args.folder), args.baseline)
    key = f"B{args.block}"
    print(f"B={args.block}; gain: against {args.baseline} on the same turns, paired 90% interval")
    print(f"{'split':<30} {'arm':<10} {'tau':>6} {'90% CI':>12} {'gain':>7} {'gain CI':>13} {'turns':>6}")
    splits = sorted({s for arm in table.values() for s in arm})
    for split in splits:
        for arm in table:
            r = table[arm].get(split, {}).get(key)
            if r is None:
                continue
            gain = f"{r['gain']:+.2f}" if "gain" in r else ""
            gci = format_interval(r.get("gain_ci90")) if "gain" in r else ""
            print(f"{split:<30} {arm:<10} {r['tau']:>6.2f} {format_interval(r['ci90']):>12} "
                  f"{gain:>7} {gci:>13} {r['turns']:>6}")
    if args.json:
        args.json.write_text(json.dumps({"baseline": args.baseline, "arms": table}, indent=1) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
