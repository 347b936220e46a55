"""The load generator: drives scripted conversations against a target, one `RequestRecord`
per turn.

Closed loop (`concurrency=N`): N conversations at once, each turn sent when the previous one
ends, a new conversation when one ends. Open loop (`rate=R`): turns arrive on a seeded
Poisson/gamma schedule whatever the server does; an arrival continues the oldest idle
conversation (its previous turn done) or opens a new one; `max_concurrency` caps turns in
flight (an arrival waits for a slot: `cap_wait_ms`, apart from the saturation lag). Each turn
probes the RTT on its connection just before it is sent. Warmup turns must all succeed and
are not measured. Connection-level failures end their conversation; after
`max_consecutive_failures` of them in a row the run stops early (the server is gone).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import aiohttp

from turnspec.loadtest.arrivals import schedule
from turnspec.loadtest.monitor import LoopMonitor, burn_loop
from turnspec.loadtest.record import RequestRecord
from turnspec.loadtest.run_config import RunConfig, RunResult
from turnspec.loadtest.targets import Connector, Link
from turnspec.loadtest.workload import Script, ScriptTurn

# a failure after which the connection is not trusted for the conversation's next turn
CONNECTION_FAILURES = ("connection_error", "incomplete_stream", "bad_stream", "timeout",
                       "UNAVAILABLE", "DEADLINE_EXCEEDED", "CANCELLED", "UNKNOWN", "INTERNAL")


@dataclass(slots=True)
class _Conv:
    script: Script
    link: Link | None = None
    next: int = 0
    prev_turn: ScriptTurn | None = None
    prev: RequestRecord | None = None
    broken: bool = False

    @property
    def more(self) -> bool:
        return not self.broken and self.next < len(self.script.turns)


def connection_failure(rec: RequestRecord) -> bool:
    return not rec.ok and (rec.error or {}).get("code") in CONNECTION_FAILURES


class Runner:
    def __init__(self, cfg: RunConfig, connector: Connector, source: Iterator[Script],
                 warmup_source: Iterator[Script] | None = None,
                 on_record: Callable[[RequestRecord], None] | None = None) -> None:
        self.cfg = cfg
        self.connector = connector
        self.source = source
        self.warmup_source = warmup_source or source
        self.on_record = on_record
        self.result = RunResult()
        self._issued = 0
        self._inflight = 0
        self._failures_in_row = 0
        self._stop = False
        self._t0 = 0.0
        self._last_end = 0.0

    async def run(self) -> RunResult:
        res = self.result
        res.started_unix = time.time()
        monitor = LoopMonitor()
        monitor.start()
        burner = asyncio.create_task(burn_loop(self.cfg.burn_loop_ms)) \
            if self.cfg.burn_loop_ms > 0 else None
        try:
            problem = await self.connector.preflight()
            if problem is None and self.cfg.warmup:
                problem = await self._warmup()
            if problem is not None:
                res.notes.append(problem)
                rec = RequestRecord(self.connector.target.transport)
                rec.begin()
                res.records.append(rec.fail({"code": "connection_error" if "warmup" not in
                                             problem else "warmup_failed", "message": problem}))
            else:
                monitor.reset()
                self._t0 = self._last_end = time.perf_counter()
                await (self._open_loop() if self.cfg.rate else self._closed_loop())
                res.wall_s = self._last_end - self._t0
        finally:
            if burner is not None:
                burner.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await burner
            await monitor.stop()
            res.loop_lag_ms, res.client_cpu_util = monitor.lags_ms, monitor.cpu_util
        return res

    # -- one turn ----------------------------------------------------------------------------

    async def _turn(self, conv: _Conv, measured: bool = True) -> RequestRecord:
        turn = conv.script.turns[conv.next]
        transport = self.connector.target.transport
        self._inflight += 1
        try:
            rtt = None
            if conv.link is None:
                conv.link = await self.connector.open()
            if self.cfg.rtt_probe:
                rtt = await conv.link.probe_rtt()
            cancel_after = self.cfg.barge_in_after if measured and self._barges(conv, turn) \
                else None
            tools, choice = self._tools(conv.script, turn)
            async with asyncio.timeout(self.cfg.timeout_s):
                rec = await conv.link.send(turn, tools, conv.prev_turn, conv.prev,
                                           temperature=self.cfg.temperature,
                                           cancel_after=cancel_after, tool_choice=choice)
            rec.rtt_ms = rtt
        except (aiohttp.ClientError, OSError) as e:  # WS connect
            rec = _failed(transport, "connection_error", f"cannot connect: {e or type(e)}")
        except TimeoutError:
            rec = _failed(transport, "timeout", f"no final event within {self.cfg.timeout_s} s")
        finally:
            self._inflight -= 1
        rec.conversation_id, rec.turn, rec.kind = conv.script.id, turn.index, turn.kind
        conv.prev_turn, conv.prev, conv.next = turn, rec, conv.next + 1
        conv.broken = connection_failure(rec)
        return rec

    def _tools(self, script: Script, turn: ScriptTurn) -> tuple[tuple[dict, ...], str | None]:
        """(tools, tool_choice) a turn sends under --tool-mode and --tool-choice."""
        mode = self.cfg.tool_mode
        if mode == "none" or not script.tools:
            return (), None
        if mode == "prompt":
            return script.tools, "none"
        forced = self.cfg.tool_choice == "script" and turn.kind == "tool_call"
        return script.tools, "required" if forced else None

    def _barges(self, conv: _Conv, turn: ScriptTurn) -> bool:
        if self.cfg.barge_in <= 0:
            return False
        key = f"turnspec-loadtest-barge:{self.cfg.seed}:{conv.script.id}:{turn.index}"
        return random.Random(key).random() < self.cfg.barge_in

    def _done(self, rec: RequestRecord) -> None:
        self.result.records.append(rec)
        self._last_end = time.perf_counter()
        self._failures_in_row = self._failures_in_row + 1 if connection_failure(rec) else 0
        if self._failures_in_row >= self.cfg.max_consecutive_failures and not self._stop:
            self._stop = True
            self.result.notes.append(
                f"stopped early: {self._failures_in_row} turns in a row failed at the connection "
                f"(last: {(rec.error or {}).get('message', '')[:200]})")
        if self.on_record is not None:
            self.on_record(rec)

    def _may_start(self) -> bool:
        cfg = self.cfg
        return not self._stop and (cfg.requests is None or self._issued < cfg.requests) and (
            cfg.duration_s is None or time.perf_counter() - self._t0 < cfg.duration_s)

    async def _close(self, conv: _Conv) -> None:
        if conv.link is not None:
            await conv.link.close()
            conv.link = None

    # -- phases ------------------------------------------------------------------------------

    async def _warmup(self) -> str | None:
        width = asyncio.Semaphore(min(self.cfg.warmup, self.cfg.concurrency
                                      or self.cfg.max_concurrency or 4))

        async def one() -> RequestRecord:
            async with width:
                conv = _Conv(next(self.warmup_source))
                try:
                    return await self._turn(conv, measured=False)
                finally:
                    await self._close(conv)

        recs = await asyncio.gather(*(one() for _ in range(self.cfg.warmup)))
        self.result.warmup_records = list(recs)
        bad = [r for r in recs if not r.ok]
        if not bad:
            return None
        err = bad[0].error or {}
        return (f"warmup failed: {len(bad)} of {len(recs)} turns (first: "
                f"{err.get('code') or err.get('status')}: {err.get('message', '')[:200]})")

    async def _closed_loop(self) -> None:
        async def worker() -> None:
            backoff = 0.0
            while self._may_start():
                conv = _Conv(next(self.source))
                try:
                    while conv.more and self._may_start():
                        self._issued += 1
                        rec = await self._turn(conv)
                        self._done(rec)
                finally:
                    await self._close(conv)
                if conv.broken:  # don't spin against a dead server
                    backoff = min(1.0, backoff * 2 or 0.05)
                    await asyncio.sleep(backoff)
                else:
                    backoff = 0.0

        assert self.cfg.concurrency is not None
        await self._finish([asyncio.create_task(worker()) for _ in range(self.cfg.concurrency)])

    async def _open_loop(self) -> None:
        cfg = self.cfg
        assert cfg.rate is not None
        loop = asyncio.get_running_loop()
        idle: collections.deque[_Conv] = collections.deque()
        cap = asyncio.Semaphore(cfg.max_concurrency) if cfg.max_concurrency else None
        tasks: list[asyncio.Task[None]] = []
        start = loop.time()

        async def arrival(due: float) -> None:
            t = loop.time()
            async with cap or contextlib.nullcontext():
                self.result.cap_wait_ms.append((loop.time() - t) * 1000.0)
                conv = idle.popleft() if idle else _Conv(next(self.source))
                rec = await self._turn(conv)
                rec.arrival_lag_ms = (t - due) * 1000.0
                self._done(rec)
                if conv.more:
                    idle.append(conv)
                else:
                    await self._close(conv)

        for at in schedule(cfg.rate, cfg.burstiness, cfg.seed, cfg.duration_s, cfg.requests):
            due = start + at
            if due > loop.time():
                await asyncio.sleep(due - loop.time())
            if not self._may_start():
                break
            self.result.arrival_lag_ms.append((loop.time() - due) * 1000.0)
            self._issued += 1
            tasks.append(asyncio.create_task(arrival(due)))
        await self._finish(tasks)
        while idle:
            await self._close(idle.popleft())

    async def _finish(self, tasks: list[asyncio.Task[None]]) -> None:
        """Wait for the turns in flight, at most the grace period past the duration."""
        if not tasks:
            return
        limit = None
        if self.cfg.duration_s is not None:
            limit = max(0.0, self._t0 + self.cfg.duration_s - time.perf_counter()) \
                + self.cfg.grace_s
        _, pending = await asyncio.wait(tasks, timeout=limit)
        if pending:
            self.result.unfinished = self._inflight
            self.result.notes.append(f"{self._inflight} turns still in flight {self.cfg.grace_s}"
                                     " s after the end were cancelled (not counted)")
            for t in pending:
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)


def _failed(transport: str, code: str, message: str) -> RequestRecord:
    rec = RequestRecord(transport)
    rec.begin()
    return rec.fail({"code": code, "message": message})
