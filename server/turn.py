"""One admitted turn: engine deltas in, typed events out, cancellation reaching the engine.

Lifecycle: `Session.start()` validates, renders and admits, then hands back a `Turn`;
the transport iterates `events()` and always calls `close()` (idempotent). `cancel()`
(barge-in, `response.cancel`, gRPC Abort) calls `Engine.abort`, which frees the sequence's
KV within one engine step; the engine's final delta then ends the stream as "cancelled".
A transport whose client vanished simply stops iterating: `close()` closes the engine's
`DeltaStream`, which aborts the request if it had not finished (one abort: `Engine.abort` is
idempotent, so a cancel before the disconnect does not add a second).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from opentelemetry.trace import Span

from turnspec.engine.protocol import (
    ContextLengthError,
    Delta,
    DeltaStream,
    EngineDeadError,
    EngineError,
    GenerateRequest,
    SpecStats,
    Timing,
)
from turnspec.server.errors import ApiError, engine_unavailable, internal, invalid
from turnspec.server.events import (
    FINISH_CANCELLED,
    FINISH_ERROR,
    FINISH_LENGTH,
    FINISH_STOP,
    FINISH_TOOLS,
    CallRecord,
    TurnDone,
    Usage,
)
from turnspec.server.timing import TurnClock, stamp, timing_block
from turnspec.server.tracing import trace_id_of
from turnspec.tools_grammar.parser import (
    ParseEvent,
    TextDelta,
    ToolCallDone,
    ToolCallStarted,
    ToolCallStreamParser,
)
from turnspec.tools_grammar.sentence import SentenceWatch

if TYPE_CHECKING:
    from turnspec.server.hub import SessionHub

log = logging.getLogger("turnspec.server")

TurnEvent = ParseEvent | TurnDone  # what Turn.events() yields; TurnDone comes last, once

_ENGINE_FINISH = {"stop": FINISH_STOP, "length": FINISH_LENGTH, "abort": FINISH_CANCELLED,
                  "error": FINISH_ERROR}


class Turn:
    def __init__(self, hub: SessionHub, transport: str, request: GenerateRequest,
                 stream: DeltaStream, *, response_id: str,
                 parser: ToolCallStreamParser | None, clock: TurnClock,
                 span: Span | None = None,
                 on_done: Callable[[Turn, TurnDone], None] | None = None) -> None:
        self.hub = hub
        self.transport = transport
        self.request = request
        self.request_id = request.request_id
        self.response_id = response_id
        self.prompt_tokens = len(request.prompt_token_ids)
        self.completion_tokens = 0
        self.generated_ids: list[int] = []
        self._parser = parser
        self.text_only = parser is None  # no tool call can come
        self.clock = clock
        self.span = span  # the turn's root span, when the server traces
        self._engine_timing: Timing | None = None
        self._spec: SpecStats | None = None
        self._sentence = SentenceWatch()
        self._on_done = on_done
        self._stream = stream  # from Engine.generate(request), already validated
        self._finished = False  # the engine sent its final delta (or failed)
        self._closed = False
        self._cancel_requested = False
        self._stamped = False
        self.done: TurnDone | None = None

    # -- control ---------------------------------------------------------------------------

    async def cancel(self) -> None:
        """Barge-in: ask the engine to stop; the stream then ends with "cancelled"."""
        if self._finished or self._cancel_requested:
            return
        self._cancel_requested = True
        await self.hub.engine.abort(self.request_id)

    async def close(self) -> None:
        """Release everything the turn holds; aborts the engine request if still running."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._stream.aclose()  # aborts the engine request if it has not finished
        finally:
            self.hub.turn_closed(self)
            if self.done is None:  # the client went away before the turn ended
                self.done = self._make_done(FINISH_CANCELLED, None, None, [], "")
            self._log()

    # -- streaming -------------------------------------------------------------------------

    async def events(self) -> AsyncIterator[TurnEvent]:
        """Text / tool-call events, then exactly one `TurnDone`."""
        text_parts: list[str] = []
        calls: list[CallRecord] = []
        final: Delta | None = None
        error = None
        try:
            async for d in self._stream:
                if d.token_ids:
                    self.completion_tokens += len(d.token_ids)
                    self.generated_ids.extend(d.token_ids)
                if d.text:
                    # the parser may hold back text that could open a tool call
                    evs: list[ParseEvent] = [TextDelta(d.text)] if self._parser is None \
                        else self._parser.feed(d.text)
                    self._observe(evs, text_parts, calls)
                    for ev in evs:
                        yield ev
                if d.finished:
                    final = d
                    break
        except EngineError as e:  # lazy validation (first iteration), or the engine died
            error = engine_error(e)
        self._finished = True
        if self._parser is not None and error is None:
            evs = self._parser.finish()
            self._observe(evs, text_parts, calls)
            for ev in evs:
                yield ev
        if self._sentence.finish():  # the turn ended right after a terminator
            self.clock.first_sentence = time.perf_counter()
        if error is None and final is None:
            reason = FINISH_CANCELLED  # the engine ended the stream without a final delta
        elif error is None:
            assert final is not None
            reason = _ENGINE_FINISH.get(final.finish_reason or "stop", FINISH_STOP)
            if reason == FINISH_ERROR:
                error = internal(f"engine failed: {final.error or 'unknown error'}")
            elif reason == FINISH_STOP and calls:
                reason = FINISH_TOOLS
        else:
            reason = FINISH_ERROR
        self.done = self._make_done(reason, final, error, calls, "".join(text_parts))
        if self._on_done is not None and error is None:
            self._on_done(self, self.done)
        yield self.done

    # -- bookkeeping -----------------------------------------------------------------------

    def _observe(self, evs: list[ParseEvent], text_parts: list[str],
                 calls: list[CallRecord]) -> None:
        """Collect the turn's text and calls, and mark its voice moments on the clock: first
        output, first spoken sentence, each tool call's start and parsed end."""
        if not evs:
            return
        clock, now = self.clock, time.perf_counter()
        if clock.first_output is None:
            clock.first_output = now
        for ev in evs:
            if isinstance(ev, TextDelta):
                text_parts.append(ev.text)
                if self._sentence.feed(ev.text):
                    clock.first_sentence = now
            elif isinstance(ev, ToolCallStarted):
                clock.calls.append((ev.name, now, now))
            elif isinstance(ev, ToolCallDone):
                calls.append(CallRecord(ev.call_id, ev.name, ev.arguments_json))
                if clock.calls:
                    name, start, _ = clock.calls[-1]
                    clock.calls[-1] = (name, start, now)
                if clock.first_call_done is None:
                    clock.first_call_done = now

    def _make_done(self, reason: str, final: Delta | None, error: Any, calls: list[CallRecord],
                   text: str) -> TurnDone:
        t = final.timing if final is not None and final.timing is not None else Timing(
            prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens)
        spec = final.spec if final is not None else None
        self._engine_timing, self._spec = t, spec
        timing = timing_block(self.clock, t)
        if self.span is not None and self.span.is_recording():
            timing["trace_id"] = format(self.span.get_span_context().trace_id, "032x")
        block = {"request_id": self.request_id, "model": self.hub.engine.model_name,
                 "timing": timing, "spec": spec.as_dict() if spec is not None else None}
        if final is not None and final.stop_reason is not None:  # e.g. the loop guard ended it
            block["stop_reason"] = final.stop_reason
        usage = Usage(self.prompt_tokens, self.completion_tokens, t.cached_tokens)
        return TurnDone(reason, text, calls, usage, block, error)

    def stamp(self, done: TurnDone) -> None:
        """The transport is about to serialize `done`: close the server's E2E now. Idempotent;
        `close()` stamps a turn whose transport never got to it (the client left)."""
        if self._stamped:
            return
        self._stamped = True
        stamp(done.turnspec["timing"], self.clock, time.perf_counter())

    def _log(self) -> None:
        """Metrics and the turn's log line; its spans are built right after, on the loop,
        so the terminal event goes out first."""
        d = self.done
        assert d is not None
        self.stamp(d)
        tm = d.turnspec["timing"]
        hub = self.hub
        hub.metrics.finished(self.transport, d.finish_reason, tm, self._spec,
                             (d.error.code or d.error.type) if d.error else None)
        trace_id = tm.get("trace_id") or trace_id_of(self.request.trace)
        stop_reason = d.turnspec.get("stop_reason")
        log.info("%s %s %s prompt=%d cached=%d completion=%d ttft_ms=%s e2e_ms=%.1f%s%s%s",
                 self.transport, self.request_id, d.finish_reason, d.usage.prompt_tokens,
                 d.usage.cached_tokens, d.usage.completion_tokens, tm.get("server_ttft_ms"),
                 tm["server_e2e_ms"], f" stop_reason={stop_reason}" if stop_reason else "",
                 f" trace_id={trace_id}" if trace_id else "",
                 f" error={d.error.message}" if d.error else "")
        if self.span is not None and hub.tracer is not None:
            asyncio.get_running_loop().call_soon(
                hub.tracer.finish, self.span, self.clock, d, self._engine_timing, self._spec,
                self.response_id)


def engine_error(e: EngineError) -> ApiError:
    """An engine's refusal of a request, as a 400 (the engine says what was wrong); an engine
    that died (`EngineDeadError`) as a retryable 503 (gRPC UNAVAILABLE)."""
    if isinstance(e, EngineDeadError):
        return engine_unavailable(str(e))
    code = "context_length_exceeded" if isinstance(e, ContextLengthError) else "invalid_request"
    return invalid(str(e), param="messages" if code == "context_length_exceeded" else None,
                   code=code)
