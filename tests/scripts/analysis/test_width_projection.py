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


def test_a_measured_table_gives_the_fastest_measured_width_its_pick(tmp_path: Path) -> None:
    """--measured: with a verify whose cost is flat up to 64 nodes a row at one user and grows
    with every token at 32 users, the rule picks a wide tree for one user and one block at 32,
    and its pick is the projection's fastest over the measured widths."""
    from turnspec.benchmarks.simulate_measured import read_measured

    points = [{"mode": "decode", "concurrency": c, "block": 1, "step_ms": 10.0 + c / 8, "steps": 100}
              for c in (1, 32)]
    for nodes in (16, 32, 64, 128, 256):
        points.append({"mode": "dflash", "concurrency": 1, "block": nodes, "steps": 50,
                       "step_ms": 14.0 if nodes <= 64 else 14.0 * nodes / 64})
        points.append({"mode": "dflash", "concurrency": 32, "block": nodes, "steps": 50,
                       "step_ms": 20.0 * nodes / 16})
    path = tmp_path / "sizing.json"
    path.write_text(__import__("json").dumps({"device": "X", "prompt_tokens": 1024,
                                              "decode_tokens": 128, "points": points}))
    tau = Curve.of([(1, 5.2), (4, 6.2), (16, 6.7)])
    rows = wp.measured_projection(read_measured(path), tau)
    assert [r["concurrency"] for r in rows] == [1, 32]
    one, full = rows
    assert one["nodes"] == 64 and full["nodes"] == 16
    for r in rows:  # the pick is the fastest measured width (none between them is faster here)
        assert abs(r["tok_s"] - max(r["measured"].values())) < 1e-9 * r["tok_s"]
    assert one["plain_tok_s"] == 1 / (10.125 / 1e3)
