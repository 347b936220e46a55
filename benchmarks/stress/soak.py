"""The bounded soak: for a set number of minutes, cycles of a disconnect storm, a batch of
hostile messages and a normal turn against one server; after each cycle, once the engine is
idle, its RSS, open file descriptors, KV blocks held and sequences running. Growth is measured
from the end of the first cycle (allocators and caches warm up in it)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from turnspec.benchmarks.stress.fuzz import Fuzzer
from turnspec.benchmarks.stress.hostile import cases
from turnspec.benchmarks.stress.server_proc import ServerProcess
from turnspec.benchmarks.stress.storm import run_storm
from turnspec.benchmarks.stress.turn import normal_turn


@dataclass(slots=True)
class SoakResult:
    samples: list[dict[str, float]] = field(default_factory=list)
    bad: int = 0  # fuzz messages without an acceptable answer, over every cycle
    storm_failures: int = 0
    normal_turns_failed: int = 0

    def growth(self, key: str) -> float | None:
        if len(self.samples) < 2:
            return None
        return round(self.samples[-1][key] - self.samples[0][key], 1)

    def as_dict(self) -> dict[str, Any]:
        return {"cycles": len(self.samples), "bad": self.bad,
                "storm_failures": self.storm_failures,
                "normal_turns_failed": self.normal_turns_failed,
                "rss_growth_mb": self.growth("rss_mb"), "fds_growth": self.growth("fds"),
                "kv_used_max": max((s["kv_used"] for s in self.samples), default=None),
                "active_max": max((s["active"] for s in self.samples), default=None),
                "samples": self.samples}


async def run_soak(srv: ServerProcess, minutes: float, *, storm_clients: int = 20,
                   fuzz_messages: int = 200, limit: int = 64 << 10,
                   printer: Any = print) -> SoakResult:
    result = SoakResult()
    t0 = time.monotonic()
    cycle = 0
    printer(f"{'min':>6}{'cycle':>7}{'RSS MB':>9}{'fds':>6}{'KV used':>9}{'active':>8}"
            f"{'ws conns':>10}")
    while time.monotonic() - t0 < minutes * 60.0:
        storm = await run_storm("127.0.0.1", srv.port, srv.grpc_port, storm_clients)
        result.storm_failures += len(storm.failures)
        fz = await Fuzzer("127.0.0.1", srv.port, srv.grpc_port).run(
            cases(fuzz_messages, seed=1000 + cycle, limit=limit), concurrency=8)
        result.bad += fz.bad
        if not await normal_turn(srv.port):
            result.normal_turns_failed += 1
        _, m = srv.wait_idle(60.0)
        s = {"minutes": round((time.monotonic() - t0) / 60.0, 2), "cycle": cycle,
             "rss_mb": round(srv.rss_mb(), 1), "fds": srv.open_fds(),
             "kv_used": m.get("turnspec_engine_used_kv_blocks", -1),
             "active": m.get("turnspec_engine_active_sequences", -1),
             "ws_connections": m.get("turnspec_ws_connections", -1)}
        result.samples.append(s)
        printer(f"{s['minutes']:>6.1f}{cycle:>7}{s['rss_mb']:>9.1f}{s['fds']:>6}"
                f"{s['kv_used']:>9.0f}{s['active']:>8.0f}{s['ws_connections']:>10.0f}")
        cycle += 1
    return result
