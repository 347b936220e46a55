"""The width rule under `turnspec simulate`'s roofline: for a target and drafter shape on a
device, the verify blocks a greedy row gets at each concurrency, and the projected output tok/s
at that width beside one block and the full 16 (a projection from the roofline and the
drafter's τ by branches, not a measurement; docs/simulate.md has the model's limits).
With --measured, the cost is a measured table instead (benchmarks/sizing.py's JSON, e.g. the
plugin's trees at 16..256 nodes a row, `PLUGIN=trees scripts/gpu/sizing.sh`): at each
concurrency the rule's pick and every measured width's projected tok/s.

usage: python scripts/analysis/width_projection.py [--model qwen3-8b] [--drafter dflash-5]
           [--hardware h200] [--context 1024] [--tau-curve FILE] [--concurrency 1,2,4,...]
       python scripts/analysis/width_projection.py --measured sizing.json [--tau-curve FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from turnspec.benchmarks.simulate import Simulation, hardware
from turnspec.benchmarks.simulate_measured import MeasuredRun, read_measured
from turnspec.benchmarks.simulate_shapes import load_drafter, load_model
from turnspec.engine.local.verify_cost import read_tau_curve
from turnspec.engine.spec.width import Curve, WidthRule

ROOT = Path(__file__).resolve().parents[2]
BLOCK, MOST = 16, 16


def rule_at(sim: Simulation, tau: Curve, concurrency: int, context: float) -> WidthRule:
    """The width rule one step of `concurrency` rows meets: the roofline's verify cost by
    tokens (every branch a row of BLOCK tokens over its own context) and the drafter's pass."""
    rows = sorted({1, 2, 4, 8, 16, 32, 64, 128, 256, 512, concurrency * MOST})
    cost = Curve.of([(r * BLOCK, sim.verify(r, BLOCK, context).ms / 1e3) for r in rows])
    draft = sim.draft(concurrency, BLOCK, context, tau.at(1)).ms / 1e3
    return WidthRule(tau, cost, fixed=draft)


def projection(sim: Simulation, tau: Curve, concurrencies: list[int], context: float) -> list[dict]:
    out = []
    for c in concurrencies:
        rule = rule_at(sim, tau, c, context)
        tok_s = {b: c * tau.at(b) / (rule.fixed + rule.cost.at(c * b * BLOCK))
                 for b in range(1, MOST + 1)}
        pick = rule.branches(c, 0, BLOCK, MOST)
        out.append({"concurrency": c, "blocks": pick, "tok_s": tok_s[pick], "tok_s_1": tok_s[1],
                    "tok_s_16": tok_s[MOST], "plain_tok_s": c / (sim.decode(c, context).ms / 1e3)})
    return out


def measured_projection(run: MeasuredRun, tau: Curve) -> list[dict]:
    """The rule over a measured table: at each concurrency c with DFlash points of whole blocks
    of BLOCK nodes, the cost curve is the measured step (draft + verify of B nodes a row)
    against the tokens verified (c * B), τ the drafter's at B / BLOCK blocks; the pick (nodes a
    row), its tok/s, each measured width's projected tok/s, and plain decode's measured."""
    decode = {p.concurrency: p.step_ms for p in run.points if p.mode == "decode"}
    out = []
    for c in sorted({p.concurrency for p in run.points if p.mode == "dflash"}):
        pts = sorted((p for p in run.points if p.mode == "dflash" and p.concurrency == c
                      and p.block % BLOCK == 0), key=lambda p: p.block)
        if not pts:
            continue
        rule = WidthRule(tau, Curve.of([(c * p.block, p.step_ms / 1e3) for p in pts]))
        pick = rule.branches(c, 0, BLOCK, pts[-1].block // BLOCK)
        out.append({"concurrency": c, "nodes": pick * BLOCK,
                    "tok_s": c * tau.at(pick) / rule.cost.at(c * pick * BLOCK),
                    "measured": {p.block: c * tau.at(p.block / BLOCK) / (p.step_ms / 1e3)
                                 for p in pts},
                    "plain_tok_s": c / (decode[c] / 1e3) if c in decode else None})
    return out


def print_measured(rows: list[dict]) -> None:
    widths = sorted({w for r in rows for w in r["measured"]})
    print(f"{'users':>5} {'nodes':>6} {'tok/s':>9} " + " ".join(f"{w:>8}n" for w in widths)
          + f" {'plain':>9}")
    for r in rows:
        cells = " ".join(f"{r['measured'][w]:>9.0f}" if w in r["measured"] else f"{'-':>9}"
                         for w in widths)
        plain = f"{r['plain_tok_s']:>9.0f}" if r["plain_tok_s"] else f"{'-':>9}"
        print(f"{r['concurrency']:>5} {r['nodes']:>6} {r['tok_s']:>9.0f} {cells} {plain}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="qwen3-8b")
    p.add_argument("--drafter", default="dflash-5")
    p.add_argument("--hardware", default="h200")
    p.add_argument("--context", type=float, default=1024.0)
    p.add_argument("--tau-curve", type=Path, default=ROOT / "models/assets/smollm2-dflash")
    p.add_argument("--concurrency", default="1,2,4,8,16,32,64")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--measured", type=Path, default=None,
                   help="benchmarks/sizing.py's merged JSON: the cost from it, not the roofline")
    args = p.parse_args()
    if args.measured is not None:
        rows = measured_projection(read_measured(args.measured), read_tau_curve(args.tau_curve))
        print_measured(rows)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1) + "\n")
        return
    _, target = load_model(args.model)
    _, drafter = load_drafter(args.drafter, target)
    sim = Simulation(target, drafter, hardware(args.hardware))
    rows = projection(sim, read_tau_curve(args.tau_curve),
                      [int(c) for c in args.concurrency.split(",")], args.context)
    print(f"{'users':>5} {'blocks':>6} {'tok/s':>9} {'1 block':>9} {'16 blocks':>9} {'plain':>9}")
    for r in rows:
        print(f"{r['concurrency']:>5} {r['blocks']:>6} {r['tok_s']:>9.0f} {r['tok_s_1']:>9.0f} "
              f"{r['tok_s_16']:>9.0f} {r['plain_tok_s']:>9.0f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
