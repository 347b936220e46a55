"""Calibrating the roofline on measured points: what the engine adds that no roofline sees.

The plain roofline (benchmarks/simulate.py) is a lower bound. `turnspec simulate --measured F
--calibrate` fits four constants on the file's points (or on the concurrencies `--fit-on`
names, so the rest check the fit) and predicts every point again with them:

- decode points: measured = memory_ms / efficiency + pass_overhead, least squares over the
  decode points: the share of the copy bandwidth the engine's decode reaches, and a fixed cost
  per target pass (launches, sampling, the scheduler's turn);
- DFlash points: measured - (the calibrated roofline of the draft and verify passes) =
  spec_fixed + spec_per_row x concurrency, least squares: what a speculative step adds beyond
  its two passes (unfused draft-side work, per-request bookkeeping on the host).

Fitted constants describe one engine build on one device; docs/simulate.md says how far they
carry.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from turnspec.benchmarks.simulate import Hardware, Simulation, projection
from turnspec.benchmarks.simulate_measured import FLAG_ABOVE, MeasuredPoint, MeasuredRun


def _line(xs: list[float], ys: list[float], what: str) -> tuple[float, float]:
    """Least-squares slope and intercept of ys on xs."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if n < 2 or sxx <= 0:
        raise ValueError(f"calibration: {what} needs points at two or more distinct "
                         f"concurrencies, got {n} point(s)")
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return slope, my - slope * mx


@dataclass(slots=True, frozen=True)
class Calibration:
    efficiency: float          # achieved share of the bandwidth the simulation was given
    pass_overhead_ms: float    # per target (or drafter) pass
    spec_fixed_ms: float = 0.0     # per DFlash step, beyond its two calibrated passes
    spec_per_row_ms: float = 0.0   # per running request per DFlash step
    fit_on: tuple[int, ...] = ()   # the concurrencies the constants came from

    def __post_init__(self) -> None:
        if not 0 < self.efficiency <= 1.5:
            raise ValueError(f"calibration: bandwidth efficiency {self.efficiency:.3f} is outside "
                             "0..1.5; the decode points do not look memory-bound")

    def simulation(self, sim: Simulation) -> Simulation:
        hw = sim.hardware
        return dataclasses.replace(sim, overhead_ms=max(self.pass_overhead_ms, 0.0),
                                   hardware=Hardware(hw.name, hw.bandwidth * self.efficiency,
                                                     hw.peak_flops))

    def step_ms(self, sim: Simulation, p: MeasuredPoint, ctx: float) -> float:
        """The calibrated prediction of one measured point (`sim` already calibrated)."""
        if p.mode == "decode":
            return sim.decode(p.concurrency, ctx).ms
        pred = sim.predict(p.concurrency, p.block, ctx, context_rows=p.accept_len or 1.0)
        assert pred.spec_ms is not None
        return pred.spec_ms + self.spec_fixed_ms + self.spec_per_row_ms * p.concurrency

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def fit(sim: Simulation, run: MeasuredRun, fit_on: tuple[int, ...] | None = None) -> Calibration:
    """The constants from the run's points at the concurrencies in `fit_on` (all by default)."""
    use = [p for p in run.points if fit_on is None or p.concurrency in fit_on]
    ctx = run.context
    dec = [p for p in use if p.mode == "decode"]
    slope, intercept = _line([sim.decode(p.concurrency, ctx).memory_ms for p in dec],
                             [p.step_ms for p in dec], "the decode fit")
    if slope <= 0:
        raise ValueError(f"calibration: decode step falls as its bytes grow (slope {slope:.3f}); "
                         "expected memory-bound decode points")
    cal = Calibration(efficiency=1.0 / slope, pass_overhead_ms=intercept,
                      fit_on=tuple(sorted({p.concurrency for p in use})))
    spec = [p for p in use if p.mode == "dflash"]
    if not spec or sim.drafter is None:
        return cal
    base = cal.simulation(sim)
    per_row, fixed = _line([float(p.concurrency) for p in spec],
                           [p.step_ms - cal.step_ms(base, p, ctx) for p in spec],
                           "the DFlash fit")
    return dataclasses.replace(cal, spec_fixed_ms=fixed, spec_per_row_ms=per_row)


def calibrated_rows(sim: Simulation, run: MeasuredRun, cal: Calibration) -> list[dict[str, Any]]:
    """Every point of the run against its calibrated prediction, marked when it was fitted."""
    base, rows = cal.simulation(sim), []
    for p in run.points:
        predicted = cal.step_ms(base, p, run.context)
        err = (predicted - p.step_ms) / p.step_ms
        rows.append({"mode": p.mode, "concurrency": p.concurrency, "block": p.block,
                     "measured_ms": p.step_ms, "predicted_ms": predicted, "error": err,
                     "fitted": p.concurrency in cal.fit_on, "flagged": abs(err) > FLAG_ABOVE})
    return rows


def calibrated_projection(sim: Simulation, cal: Calibration, block: int, ctx: float, tau: float,
                          published_tok_s: float | None = None) -> dict[str, Any]:
    """`simulate.projection` with the calibrated step times: τ / (c + v) x 1 / t_AR at b = 1."""
    return projection(cal.simulation(sim), block, ctx, tau, published_tok_s,
                      extra_spec_ms=cal.spec_fixed_ms + cal.spec_per_row_ms)
