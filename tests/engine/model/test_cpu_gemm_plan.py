"""The small-row GEMM plan: bucket lookup, validation, and the measured choice (from a weighted
pass over a sample of the linears, the fastest backend if it is MARGIN ahead of F.linear;
cached per process)."""

from __future__ import annotations

import pytest
import torch

from turnspec.engine.model.cpu_gemm_plan import (
    BACKENDS,
    MARGIN,
    ROW_BOUNDS,
    GemmPlan,
    measured_plan,
)


def test_backend_per_row_bucket() -> None:
    assert ROW_BOUNDS == (1, 2, 4, 8, 16, 32)
    plan = GemmPlan(("torch", "mkl_packed", "mkl_packed", "onednn", "mkl_packed", "torch"))
    assert [plan.backend(r) for r in (1, 2, 3, 4, 5, 8, 9, 16, 17, 32, 33, 500)] == \
        ["torch", "mkl_packed", "mkl_packed", "mkl_packed", "onednn", "onednn", "mkl_packed",
         "mkl_packed", "torch", "torch", "mkl_packed", "mkl_packed"]  # past 32: prefill's GEMM
    assert plan.describe() == {"1": "torch", "2": "mkl_packed", "4": "mkl_packed", "8": "onednn",
                               "16": "mkl_packed", "32": "torch"}


def test_plan_checks_itself() -> None:
    with pytest.raises(ValueError, match="expected 6 backends"):
        GemmPlan(("torch",))
    with pytest.raises(ValueError, match="expected one of"):
        GemmPlan(("torch", "torch", "cublas", "torch", "torch", "torch"))
    assert GemmPlan.fixed("onednn").choice == ("onednn",) * len(ROW_BOUNDS)


class _Clocked:
    """A linear whose every call advances a shared clock by a cost per (backend, rows): the
    selection logic, apart from real timing noise."""

    def __init__(self, clock: list[float], cost, in_features: int = 4) -> None:
        self.clock, self.cost, self.in_features, self.calls = clock, cost, in_features, 0

    def gemm(self, x2: torch.Tensor, backend: str) -> torch.Tensor:
        self.clock[0] += self.cost(backend, x2.shape[0])
        self.calls += 1
        return x2


def test_measured_plan_takes_the_fastest_per_bucket_and_samples_every_kth() -> None:
    # onednn fastest at 1 row, torch from 8 rows on, mkl_packed never; per-call seconds
    cost = {"onednn": lambda r: 1.0 if r == 1 else 5.0, "torch": lambda r: 2.0 if r == 1 else 1.0,
            "mkl_packed": lambda r: 9.0}
    clock = [0.0]
    linears = [_Clocked(clock, lambda b, r: cost[b](r), in_features=4 + i % 2) for i in range(11)]
    sizes = [10] * 11
    sizes[5] = 99                                               # the head: always timed
    plan = measured_plan(linears, sizes, max_timed=3, clock=lambda: clock[0])
    assert plan.choice == ("onednn",) + ("torch",) * 5
    # 10 others, max 3 timed: k = ceil(10/3) = 4 -> 5 (odd): linears 0 and 6 (indices 0, 5 of
    # the rest), each weighing 5, plus the head: 11 units of one call's cost per pass
    assert plan.measured_ms[0] == {"onednn": 11e3, "mkl_packed": 99e3, "torch": 22e3}
    assert [m.calls for m in linears] == [54, 0, 0, 0, 0, 54, 54, 0, 0, 0, 0]  # 6 x 3 x 3 passes
    assert measured_plan(linears, sizes, max_timed=3) is plan   # cached: same shapes


def test_a_packed_backend_must_beat_torch_by_the_margin() -> None:
    """Within MARGIN of F.linear is noise (the plan flipped between processes); a clear win is
    taken. Buckets: 1 row mkl_packed 3% faster (torch kept), 2 rows onednn 10% faster (taken),
    4+ rows torch fastest; without torch timed it is the plain argmin."""
    assert MARGIN == 0.05
    faster = {1: ("mkl_packed", 0.97), 2: ("onednn", 0.90)}

    def cost(backend: str, rows: int) -> float:
        name, f = faster.get(rows, ("", 1.0))
        return 1.0 * f if backend == name else 1.0 if backend == "torch" else 1.5

    clock = [0.0]
    linears = [_Clocked(clock, cost, in_features=8 + i) for i in range(3)]  # a fresh cache key
    plan = measured_plan(linears, [10, 20, 30], clock=lambda: clock[0])
    assert plan.choice == ("torch", "onednn") + ("torch",) * 4
    packed = measured_plan(linears, [10, 20, 30], backends=("onednn", "mkl_packed"),
                           clock=lambda: clock[0])
    assert packed.choice[0] == "mkl_packed"


def test_measured_plan_checks_its_arguments() -> None:
    clock = [0.0]
    one = [_Clocked(clock, lambda b, r: 1.0, in_features=7)]
    with pytest.raises(ValueError, match="one weight size per linear"):
        measured_plan(one, [])
    with pytest.raises(ValueError, match="expected backends among"):
        measured_plan(one, [49], backends=("blas",))
    assert set(measured_plan(one, [49], backends=("torch",)).choice) == {"torch"}
    assert set(BACKENDS) == {"onednn", "mkl_packed", "torch"}
