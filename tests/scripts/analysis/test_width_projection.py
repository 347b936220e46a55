"""scripts/analysis/width_projection.py: the width rule under the roofline picks, at every
concurrency, the width the projection itself says is fastest, wide for one user and one block
when the device is full."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from turnspec.benchmarks.simulate import Simulation, hardware
from turnspec.benchmarks.simulate_shapes import load_drafter, load_model
from turnspec.engine.spec.width import Curve

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("width_projection",
                                              ROOT / "scripts/analysis/width_projection.py")
wp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(wp)


def test_the_rule_picks_the_fastest_projected_width_and_narrows_under_load() -> None:
    _, target = load_model("qwen3-8b")
    _, drafter = load_drafter("dflash-5", target)
    sim = Simulation(target, drafter, hardware("h200"))
    tau = Curve.of([(1, 5.2), (4, 6.2), (16, 6.7)])
    rows = wp.projection(sim, tau, [1, 4, 16, 64], 1024.0)
    widths = [r["blocks"] for r in rows]
    assert widths == sorted(widths, reverse=True) and widths[0] > 1 and widths[-1] == 1
    for r in rows:
        rule = wp.rule_at(sim, tau, r["concurrency"], 1024.0)
        best = max(r["concurrency"] * tau.at(b) / (rule.fixed + rule.cost.at(r["concurrency"] * b * 16))
                   for b in range(1, 17))
        assert abs(r["tok_s"] - best) < 1e-9 * best
        assert r["tok_s"] >= max(r["tok_s_1"], r["tok_s_16"])
