"""Which fp32 GEMM serves each small row count on this CPU: measured once per process.

Decode (one row a sequence), small batches and speculative verify blocks run the model's
linears at 1-32 rows, where the fastest backend depends on the CPU, not only on the shapes. On
the dev AMD EPYC (2 threads) oneDNN's prepacked GEMM beat MKL's packed one at one
row (SmolLM2's 30 layers 10.8 vs 17.7 ms, its LM head 2.7 vs 4.0) and torch's `F.linear` was
slowest (LM head 10.1 ms); on an Intel Xeon with AMX (2 threads) the 30 layers and
the head at one row take 41.7 ms through oneDNN, 27.8 MKL packed and 25.4 `F.linear`
(`docs/history/notes/cpu-gemm-plan.md`). The plan fixed on the first cost the second a fifth
of its decode speed, so `pack_linears` times the candidates on the model's own weights at load
(about a second) and keeps the fastest per row bucket. The plan is cached per process by the
shapes timed and the thread count, so every engine over the same model in one process computes
with the same backends (greedy outputs cannot differ between two of them by backend choice).

A packed backend replaces torch's own `F.linear` in a bucket only when it is at least
`MARGIN` faster there. Where the three are within a few percent the plain argmin was noise: on
the Intel box it gave a different plan in each of four benchmark processes (4 rows
oneDNN in one, torch in the next; 16 rows MKL packed or torch), moving the no-spec baseline of
`bench spec` with it. Clear wins still count (there, oneDNN at 8 rows by 10-14%).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch

BACKENDS = ("onednn", "mkl_packed", "torch")
# Row buckets up to SMALL_M (cpu_linear.py): each serves the row counts above the previous bound.
# Fine at the low end, where a voice server's batches are: on the Intel dev box oneDNN was the
# fastest at 8 rows and the slowest at 2 (`turnspec bench cpu-gemm --batch 2`).
ROW_BOUNDS = (1, 2, 4, 8, 16, 32)
MARGIN = 0.05  # how much faster than torch's F.linear a packed backend must be to be chosen


@dataclass(slots=True, frozen=True)
class GemmPlan:
    """The backend for rows <= each of ROW_BOUNDS (past the last: MKL packed, the prefill
    GEMM), with the estimated full-model milliseconds each candidate took at that bound."""

    choice: tuple[str, ...]
    measured_ms: tuple[dict[str, float], ...] = field(default=(), compare=False)
    source: str = "measured"

    def __post_init__(self) -> None:
        if len(self.choice) != len(ROW_BOUNDS):
            raise ValueError(f"GemmPlan.choice: expected {len(ROW_BOUNDS)} backends (one per "
                             f"bound {ROW_BOUNDS}), got {len(self.choice)}")
        for name in self.choice:
            if name not in BACKENDS:
                raise ValueError(f"GemmPlan.choice: expected one of {BACKENDS}, got {name!r}")

    @classmethod
    def fixed(cls, backend: str) -> GemmPlan:
        """Every small row count on one backend (`--cpu-gemm NAME`)."""
        return cls((backend,) * len(ROW_BOUNDS), source="fixed")

    def backend(self, rows: int) -> str:
        for bound, name in zip(ROW_BOUNDS, self.choice, strict=True):
            if rows <= bound:
                return name
        return "mkl_packed"

    def describe(self) -> dict[str, str]:
        """{"1": "torch", "2": "mkl_packed", ...}: for logs and benchmark JSON."""
        return {str(b): c for b, c in zip(ROW_BOUNDS, self.choice, strict=True)}


class Gemm(Protocol):
    in_features: int

    def gemm(self, x2: torch.Tensor, backend: str) -> torch.Tensor: ...


_PLANS: dict[tuple, GemmPlan] = {}


def measured_plan(linears: Sequence[Gemm], weight_numel: Sequence[int],
                  backends: Sequence[str] = BACKENDS, max_timed: int = 16,
                  clock: Callable[[], float] = time.perf_counter) -> GemmPlan:
    """Time `backends` on a sample of `linears` at each of ROW_BOUNDS and return the fastest per
    bound (cached per process by the linears' shapes, the backends and torch's thread count).

    The largest linear (an LM head) is always timed; of the rest every k-th (k odd, so fused
    projections of different shapes alternate in the sample) up to `max_timed`, each weighed by
    k: the estimate is of a pass over the whole model, from weights read as decode reads them."""
    if not linears or len(linears) != len(weight_numel):
        raise ValueError(f"measured_plan: expected one weight size per linear, got "
                         f"{len(linears)} linears and {len(weight_numel)} sizes")
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown or not backends:
        raise ValueError(f"measured_plan: expected backends among {BACKENDS}, got {list(backends)}")
    shapes = tuple((m.in_features, n) for m, n in zip(linears, weight_numel, strict=True))
    key = (shapes, tuple(backends), torch.get_num_threads())
    if key in _PLANS:
        return _PLANS[key]
    largest = max(range(len(linears)), key=lambda i: weight_numel[i])
    rest = [i for i in range(len(linears)) if i != largest]
    k = max(1, math.ceil(len(rest) / max_timed)) | 1
    sample = [(largest, 1.0)] + [(i, float(k)) for i in rest[::k]]
    measured = []
    with torch.inference_mode():
        for rows in ROW_BOUNDS:
            gen = torch.Generator().manual_seed(rows)
            inputs = {n: torch.randn(rows, n, generator=gen)
                      for n in {linears[i].in_features for i, _ in sample}}
            ms = {b: _pass_ms(linears, sample, inputs, b, clock) for b in backends}
            measured.append({b: round(t, 3) for b, t in ms.items()})
    plan = GemmPlan(tuple(_choose(m) for m in measured), tuple(measured))
    _PLANS[key] = plan
    return plan


def _choose(ms: dict[str, float]) -> str:
    """The fastest backend if it beats torch's F.linear by MARGIN, else F.linear (the argmin
    when F.linear was not timed)."""
    best = min(ms, key=ms.get)
    if "torch" in ms and ms[best] > (1.0 - MARGIN) * ms["torch"]:
        return "torch"
    return best


def _pass_ms(linears: Sequence[Gemm], sample: list[tuple[int, float]],
             inputs: dict[int, torch.Tensor], backend: str, clock: Callable[[], float],
             passes: int = 2) -> float:
    """Weighted milliseconds of one pass over the sampled linears, each linear's call timed
    inside whole passes (its weight read after the others', as decode reads it, not hot from its
    own previous call) and its fastest of `passes` kept, after one warm-up pass."""
    best = [math.inf] * len(sample)
    for p in range(passes + 1):
        for j, (i, _) in enumerate(sample):
            x = inputs[linears[i].in_features]
            t = clock()
            linears[i].gemm(x, backend)
            if p:
                best[j] = min(best[j], clock() - t)
    return sum(w * b for (_, w), b in zip(sample, best, strict=True)) * 1e3
