"""Admission control: a bounded FIFO in front of the engine.

`max_running` turns run at once; `max_queue` more wait in arrival order; the next one is
refused at once with a retry hint. A slot released by a finishing turn passes straight to
the oldest waiter (no thundering herd, no reordering).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

from turnspec.server.errors import overloaded


class Admission:
    def __init__(self, max_running: int, max_queue: int, retry_after_s: float) -> None:
        if max_running < 1 or max_queue < 0:
            raise ValueError(f"expected max_running >= 1 and max_queue >= 0, got "
                             f"{max_running}, {max_queue}")
        self.max_running = max_running
        self.max_queue = max_queue
        self.retry_after_s = retry_after_s
        self.running = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self.rejected = 0

    @property
    def queued(self) -> int:
        return len(self._waiters)

    def check_room(self) -> None:
        """Refuse now (429) when `acquire()` would: every slot taken and the queue full.
        Called before a turn is rendered, so an overloaded server spends no CPU on the chat
        template or tokenizer of a turn it will refuse."""
        if self.running >= self.max_running and len(self._waiters) >= self.max_queue:
            self.rejected += 1
            raise overloaded(self.running, len(self._waiters), self.retry_after_s)

    async def acquire(self) -> float:
        """Take a slot; returns the milliseconds spent waiting. Raises a 429 `ApiError`."""
        if self.running < self.max_running and not self._waiters:
            self.running += 1
            return 0.0
        self.check_room()  # every slot is taken here: refuse when the queue is full too
        t0 = time.perf_counter()
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut  # release() hands us its slot (running is not decremented in between)
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release()  # granted and cancelled in the same tick: pass the slot on
            else:
                self._waiters.remove(fut)
            raise
        return (time.perf_counter() - t0) * 1000.0

    def release(self) -> None:
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                return
        assert self.running > 0, "release() without acquire()"
        self.running -= 1
