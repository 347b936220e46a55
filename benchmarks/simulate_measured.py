"""Measured points for `turnspec simulate --measured`: the JSON a GPU script writes (read here,
never written here) and each point against the model's prediction.

    {"device": "NVIDIA H200", "sglang": "0.5.17", "copy_bandwidth_gbs": 4210.0,
     "model_config": {HF config.json of the target}, "drafter_config": {z-lab config} | null,
     "prompt_tokens": 1024, "decode_tokens": 128,
     "points": [{"mode": "decode", "concurrency": 1, "block": 1, "step_ms": 4.1, "steps": 128},
                {"mode": "dflash", "concurrency": 8, "block": 16, "step_ms": 6.2, "steps": 128,
                 "accept_len": 3.4}]}

A point's context is prompt_tokens + decode_tokens / 2: the mean context over its decode.
"decode" points are compared with t_AR, "dflash" points with T_draft + T_verify(B).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from turnspec.benchmarks.simulate import HARDWARE, Simulation
from turnspec.benchmarks.simulate_shapes import read_json_object

MODES = ("decode", "dflash")
FLAG_ABOVE = 0.15  # |predicted - measured| / measured past which a point is flagged


@dataclass(slots=True, frozen=True)
class MeasuredPoint:
    """One measured configuration: mean wall time of a decode or DFlash step (draft + verify)."""

    mode: str
    concurrency: int
    block: int
    step_ms: float
    steps: int
    accept_len: float | None = None  # tokens committed per step (τ), bonus included

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode {self.mode!r}: expected one of {MODES}")
        if self.concurrency < 1 or self.steps < 1 or not self.step_ms > 0:
            raise ValueError(f"concurrency {self.concurrency}, steps {self.steps}, step_ms "
                             f"{self.step_ms}: expected >= 1, >= 1 and > 0")
        if self.mode == "decode" and self.block != 1:
            raise ValueError(f"decode point block {self.block}: expected 1")
        if self.mode == "dflash" and self.block < 2:
            raise ValueError(f"dflash point block {self.block}: expected >= 2")
        if self.accept_len is not None and not 1 <= self.accept_len <= self.block:
            raise ValueError(f"accept_len {self.accept_len}: expected 1..block ({self.block})")


@dataclass(slots=True, frozen=True)
class MeasuredRun:
    device: str
    prompt_tokens: int
    decode_tokens: int
    points: tuple[MeasuredPoint, ...]
    model_config: dict[str, Any] | None = None
    drafter_config: dict[str, Any] | None = None
    copy_bandwidth_gbs: float | None = None
    sglang: str | None = None

    def __post_init__(self) -> None:
        if self.prompt_tokens < 0 or self.decode_tokens < 0:
            raise ValueError(f"prompt_tokens {self.prompt_tokens}, decode_tokens "
                             f"{self.decode_tokens}: expected >= 0")
        if not self.points:
            raise ValueError("points: expected at least one measured point, got none")
        if self.copy_bandwidth_gbs is not None and not self.copy_bandwidth_gbs > 0:
            raise ValueError(f"copy_bandwidth_gbs {self.copy_bandwidth_gbs}: expected > 0")

    @property
    def context(self) -> float:
        """Mean context over a point's decode: the prompt, then half the decoded tokens."""
        return self.prompt_tokens + self.decode_tokens / 2

    def hardware_name(self) -> str | None:
        """The preset named in `device` ("NVIDIA H200" -> "h200"), if one is."""
        return next((name for name in HARDWARE if name in self.device.lower()), None)


def read_measured(path: str | Path) -> MeasuredRun:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"--measured {str(path)!r}: no such file")
    d = read_json_object(path, "JSON")
    for key in ("device", "prompt_tokens", "decode_tokens", "points"):
        if key not in d:
            raise ValueError(f"{path}: expected key {key!r} (docs/simulate.md, measured points)")
    points = []
    for i, p in enumerate(d["points"]):
        try:
            points.append(MeasuredPoint(mode=p["mode"], concurrency=int(p["concurrency"]),
                                        block=int(p["block"]), step_ms=float(p["step_ms"]),
                                        steps=int(p["steps"]),
                                        accept_len=None if p.get("accept_len") is None
                                        else float(p["accept_len"])))
        except KeyError as e:
            raise ValueError(f"{path}: points[{i}]: expected key {e}") from None
        except (TypeError, ValueError) as e:
            raise ValueError(f"{path}: points[{i}]: {e}") from None
    bw = d.get("copy_bandwidth_gbs")
    return MeasuredRun(device=str(d["device"]), prompt_tokens=int(d["prompt_tokens"]),
                       decode_tokens=int(d["decode_tokens"]), points=tuple(points),
                       model_config=d.get("model_config"), drafter_config=d.get("drafter_config"),
                       copy_bandwidth_gbs=None if bw is None else float(bw), sglang=d.get("sglang"))


@dataclass(slots=True, frozen=True)
class Comparison:
    point: MeasuredPoint
    context: float
    predicted_ms: float

    @property
    def error(self) -> float:
        """(predicted - measured) / measured: negative when the model is faster than the GPU."""
        return (self.predicted_ms - self.point.step_ms) / self.point.step_ms

    @property
    def flagged(self) -> bool:
        return abs(self.error) > FLAG_ABOVE

    def to_dict(self) -> dict[str, Any]:
        p = self.point
        return {"mode": p.mode, "concurrency": p.concurrency, "block": p.block,
                "context": self.context, "accept_len": p.accept_len, "steps": p.steps,
                "measured_ms": p.step_ms, "predicted_ms": self.predicted_ms,
                "error": self.error, "flagged": self.flagged}


def compare(sim: Simulation, run: MeasuredRun) -> list[Comparison]:
    """Each point against its prediction at the run's context. A DFlash point's drafter projects
    accept_len new context rows per row (1 when the file has none)."""
    out = []
    for i, p in enumerate(run.points):
        if p.mode == "decode":
            predicted = sim.decode(p.concurrency, run.context).ms
        else:
            if sim.drafter is None:
                raise ValueError(f"points[{i}] is a dflash point: expected a drafter (the file's "
                                 "drafter_config is null; pass --drafter)")
            pred = sim.predict(p.concurrency, p.block, run.context,
                               context_rows=p.accept_len or 1.0)
            assert pred.spec_ms is not None
            predicted = pred.spec_ms
        out.append(Comparison(point=p, context=run.context, predicted_ms=predicted))
    return out
