"""FakeFixedRateEngine: a deliberately FAKE engine that runs no model.

It only measures front-end overhead: `turnspec bench frontend`, and `turnspec serve --engine
fake-fixed-rate` for load tools checked against known answers (scripts/loadtest/known_answers.py).
Token i of a request becomes available at exactly `accepted + first_token_ms + i * interval_ms`
(an absolute schedule, so a slow consumer shows up as lateness instead of shifting later
tokens), whoever consumes it. Comparing arrival times through a transport with arrival times
in-process therefore isolates what the transport adds. It implements the Engine protocol so the
real server runs over it; never use it to serve users.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from turnspec.engine.protocol import (
    ContextLengthError,
    Delta,
    DeltaStream,
    EngineError,
    EngineStats,
    GenerateRequest,
    Timing,
)


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class FakeFixedRateEngine:
    """Implements the Engine protocol; emits `token_text` at a fixed rate (see module doc)."""

    takes_structural_tag = False  # the server prepares matchers as for the embedded engine

    def __init__(self, chat: Any | None = None, *, first_token_ms: float = 20.0,
                 interval_ms: float = 10.0, tokens_per_request: int = 64,
                 max_context: int = 8192, model_name: str = "fake-fixed-rate",
                 token_text: str = " hi", token_id: int = 1) -> None:
        if first_token_ms < 0 or interval_ms <= 0 or tokens_per_request < 1:
            raise ValueError(f"expected first_token_ms >= 0, interval_ms > 0, "
                             f"tokens_per_request >= 1; got {first_token_ms}, {interval_ms}, "
                             f"{tokens_per_request}")
        self.chat = chat
        self.model_name = model_name
        self.max_context = max_context
        self.first_token_ms = first_token_ms
        self.interval_ms = interval_ms
        self.tokens_per_request = tokens_per_request
        self.token_text = token_text
        self.token_id = token_id
        self._sleepers: dict[str, asyncio.Future[None]] = {}
        self._aborted: set[str] = set()
        self._active: set[str] = set()
        self._pending: set[str] = set()  # generate() called, stream not iterated yet
        self.started = False

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        self.started = True

    async def shutdown(self) -> None:
        for rid in list(self._active):
            await self.abort(rid)

    def stats(self) -> EngineStats:
        return EngineStats(active_sequences=len(self._active), waiting_sequences=0,
                           free_kv_blocks=0, total_kv_blocks=0, cached_kv_blocks=0)

    # -- Engine protocol -----------------------------------------------------------------------

    async def prepare_grammar(self, grammar: Any) -> None:
        """Nothing to prepare: the grammar is never applied here."""

    def generate(self, request: GenerateRequest) -> DeltaStream:
        n = len(request.prompt_token_ids)
        if n + request.sampling.max_tokens > self.max_context:
            raise ContextLengthError(f"prompt ({n}) + max_tokens ({request.sampling.max_tokens})"
                                     f" exceed the context of {self.max_context} tokens")
        if request.request_id in self._active:
            raise EngineError(f"request_id {request.request_id!r} is already in flight")
        self._active.add(request.request_id)
        self._pending.add(request.request_id)
        # Accepted now, like a real engine's queue (not at first iteration): the schedule runs
        # from here while the caller is still busy with other work (e.g. sending headers).
        loop = asyncio.get_running_loop()
        return DeltaStream(request.request_id,
                           self._stream(request, loop.time(), time.time() * 1000.0,
                                        time.perf_counter()), self.abort)

    async def abort(self, request_id: str) -> None:
        """Idempotent; a request that was never iterated is simply forgotten."""
        if request_id in self._pending:  # never iterated: nothing runs, just forget it
            self._pending.discard(request_id)
            self._active.discard(request_id)
        elif request_id in self._active:
            self._aborted.add(request_id)
            fut = self._sleepers.get(request_id)
            if fut is not None:
                _wake(fut)

    async def _stream(self, req: GenerateRequest, accepted: float, accepted_unix: float,
                      accepted_perf: float) -> AsyncIterator[Delta]:
        rid = req.request_id
        loop = asyncio.get_running_loop()
        if rid not in self._pending:  # aborted before the first iteration
            yield Delta(rid, [], "", finished=True, finish_reason="abort", timing=Timing())
            return
        self._pending.discard(rid)
        count = min(req.sampling.max_tokens, self.tokens_per_request)
        reason = "stop" if count < req.sampling.max_tokens else "length"
        emitted = 0
        try:
            for i in range(count):
                deadline = accepted + (self.first_token_ms + i * self.interval_ms) / 1000.0
                if deadline > loop.time():
                    fut = loop.create_future()
                    self._sleepers[rid] = fut
                    handle = loop.call_at(deadline, _wake, fut)
                    await fut
                    handle.cancel()
                if rid in self._aborted:
                    reason = "abort"
                    break
                emitted += 1
                yield Delta(rid, [self.token_id], self.token_text)
            first = self.first_token_ms if emitted else 0.0
            total = (loop.time() - accepted) * 1000.0
            n = len(req.prompt_token_ids)
            timing = Timing(received_unix_ms=accepted_unix, accepted_at=accepted_perf,
                            queue_ms=0.0, prefill_ms=first,
                            decode_ms=max(0.0, total - first), first_token_ms=first,
                            engine_host_ms=0.0, prompt_tokens=n, cached_tokens=0,
                            prefill_tokens=n, completion_tokens=emitted)
            yield Delta(rid, [], "", finished=True, finish_reason=reason, timing=timing)
        finally:
            self._sleepers.pop(rid, None)
            self._aborted.discard(rid)
            self._active.discard(rid)
