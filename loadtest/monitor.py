"""Client saturation: is the load generator itself the bottleneck?

Two signals, so that a slow client never reads as a slow server: event-loop lag (a timer
every 10 ms; how late it fires: every client-side timestamp can be late by as much) and, in
the open loop, arrival lag (a turn's actual dispatch minus its scheduled time). The process's
CPU time over wall time says whether the client was busy itself (~1.0: one core, the loop's
limit) or was starved by other processes (the server, on a shared host).
"""

from __future__ import annotations

import asyncio
import contextlib
import time


class LoopMonitor:
    def __init__(self, interval_s: float = 0.01) -> None:
        self.interval_s = interval_s
        self.lags_ms: list[float] = []
        self._task: asyncio.Task[None] | None = None
        self._cpu0 = self._wall0 = 0.0
        self.cpu_util = 0.0  # client process CPU seconds per wall second (1.0 = one core)

    def start(self) -> None:
        self.reset()
        self._task = asyncio.create_task(self._run())

    def reset(self) -> None:
        """Forget what came before (preflight, warmup): only the measured window counts."""
        self.lags_ms.clear()
        self._cpu0, self._wall0 = time.process_time(), time.perf_counter()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due = loop.time() + self.interval_s
            await asyncio.sleep(self.interval_s)
            self.lags_ms.append(max(0.0, (loop.time() - due) * 1000.0))

    async def stop(self) -> None:
        wall = time.perf_counter() - self._wall0
        self.cpu_util = (time.process_time() - self._cpu0) / wall if wall > 0 else 0.0
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


async def burn_loop(busy_ms: float, period_ms: float = 100.0) -> None:
    """Deliberately starve the client: block the event loop `busy_ms` out of every
    `period_ms` (--burn-loop-ms: checks that the saturation report fires)."""
    while True:
        end = time.perf_counter() + busy_ms / 1000.0
        while time.perf_counter() < end:
            pass
        await asyncio.sleep(max(0.0, (period_ms - busy_ms) / 1000.0))
