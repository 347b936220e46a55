"""benchmarks/simulate_fit.py: the calibration recovers constants that made the points, checks
points it did not fit, and refuses fits it cannot make; plus the measured H200 sizing file
(docs/gpu-runs/2026-12-03-sizing/) read through it, with no timing asserted."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from turnspec.benchmarks.simulate import Hardware, Simulation
from turnspec.benchmarks.simulate_fit import Calibration, calibrated_rows, fit
from turnspec.benchmarks.simulate_measured import MeasuredPoint, MeasuredRun, read_measured
from turnspec.benchmarks.simulate_shapes import TransformerShape, dflash_preset, load_model

SIZING = Path(__file__).resolve().parents[2] / "docs" / "gpu-runs" / "2026-12-03-sizing" / "sizing.json"


def _sim() -> Simulation:
    _, target = load_model("qwen3-8b")
    return Simulation(target, dflash_preset(target, 5, 16), Hardware("h200", 4.2e12, 989e12))


def _run_from(sim: Simulation, truth: Calibration, concs: tuple[int, ...]) -> MeasuredRun:
    """Points whose times ARE the calibrated model's (made to test the fit, not measured)."""
    base = truth.simulation(sim)
    pts = []
    for b in concs:
        dec = MeasuredPoint("decode", b, 1, 1.0, 127)
        pts.append(dataclasses.replace(dec, step_ms=truth.step_ms(base, dec, 1088.0)))
        for block in (4, 16):
            p = MeasuredPoint("dflash", b, block, 1.0, 127, accept_len=1.0)
            pts.append(dataclasses.replace(p, step_ms=truth.step_ms(base, p, 1088.0)))
    return MeasuredRun("NVIDIA H200", 1024, 128, tuple(pts))


def test_fit_recovers_the_constants_that_made_the_points() -> None:
    sim = _sim()
    truth = Calibration(efficiency=0.7, pass_overhead_ms=0.5, spec_fixed_ms=2.0, spec_per_row_ms=0.3)
    run = _run_from(sim, truth, (1, 8, 32))
    got = fit(sim, run)
    assert got.efficiency == pytest.approx(0.7, rel=1e-6)
    assert got.pass_overhead_ms == pytest.approx(0.5, abs=1e-6)
    assert got.spec_fixed_ms == pytest.approx(2.0, abs=1e-3)
    assert got.spec_per_row_ms == pytest.approx(0.3, abs=1e-4)
    assert got.fit_on == (1, 8, 32)
    assert all(abs(r["error"]) < 1e-6 and r["fitted"] for r in calibrated_rows(sim, run, got))


def test_points_outside_fit_on_are_checks() -> None:
    sim = _sim()
    truth = Calibration(efficiency=0.8, pass_overhead_ms=0.3, spec_fixed_ms=1.0, spec_per_row_ms=0.1)
    run = _run_from(sim, truth, (1, 8, 32))
    rows = calibrated_rows(sim, run, fit(sim, run, fit_on=(1, 8)))
    assert {r["concurrency"] for r in rows if not r["fitted"]} == {32}
    assert all(abs(r["error"]) < 1e-6 for r in rows)  # a linear truth extrapolates exactly


def test_one_concurrency_cannot_fit_a_line() -> None:
    sim = _sim()
    run = _run_from(sim, Calibration(0.8, 0.3), (8,))
    with pytest.raises(ValueError, match="two or more distinct concurrencies"):
        fit(sim, run)


def test_efficiency_outside_reason_is_refused() -> None:
    with pytest.raises(ValueError, match="bandwidth efficiency"):
        Calibration(efficiency=3.0, pass_overhead_ms=0.1)


def test_the_h200_sizing_file_reads_and_fits() -> None:
    run = read_measured(SIZING)
    sim = Simulation(TransformerShape.from_hf_dict(run.model_config, "sizing"),
                     None, Hardware("h200", run.copy_bandwidth_gbs * 1e9, 989e12))
    assert run.device == "NVIDIA H200" and len(run.points) == 12
    assert {p.block for p in run.points if p.mode == "dflash"} == {4, 8, 16}
    cal = fit(sim, run)  # no drafter: the decode constants only
    assert 0 < cal.efficiency <= 1.5 and cal.spec_per_row_ms == 0.0
