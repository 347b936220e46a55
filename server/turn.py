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

import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from turnspec.engine.protocol import (
    ContextLengthError,
    Delta,
    DeltaStream,
    EngineError,
    GenerateRequest,
    Timing,
)
from turnspec.server.errors import ApiError, internal, invalid
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
from turnspec.tools_grammar.parser import (
    ParseEvent,
    TextDelta,
    ToolCallDone,
    ToolCallStreamParser,
)

if TYPE_CHECKING:
    from turnspec.server.hub import SessionHub

log = logging.getLogger("turnspec.server")

TurnEvent = ParseEvent | TurnDone  # what Turn.events() yields; TurnDone comes last, once

_ENGINE_FINISH = {"stop": FINISH_STOP, "length": FINISH_LENGTH, "abort": FINISH_CANCELLED,
                  "error": FINISH_ERROR}


class Turn:
    def __init__(self, hub: SessionHub, transport: str, request: GenerateRequest,
                 stream: DeltaStream, *, response_id: str,
                 parser: ToolCallStreamParser | None,
                 received_unix_ms: float, received_perf: float, admission_ms: float,
                 render_ms: float,
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
        self._received_unix_ms = received_unix_ms
        self._received_perf = received_perf
        self._admission_ms = admission_ms
        self._render_ms = render_ms
        self._first_perf: float | None = None
        self._on_done = on_done
        self._stream = stream  # from Engine.generate(request), already validated
        self._finished = False  # the engine sent its final delta (or failed)
        self._closed = False
        self._cancel_requested = False
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
                    if self._parser is None:
                        evs: list[ParseEvent] = [TextDelta(d.text)]
                        text_parts.append(d.text)
                    else:  # may hold back text that could open a tool call
                        evs = self._parser.feed(d.text)
                        for ev in evs:
                            _collect(ev, text_parts, calls)
                    if evs and self._first_perf is None:
                        self._first_perf = time.perf_counter()  # first output handed over
                    for ev in evs:
                        yield ev
                if d.finished:
                    final = d
                    break
        except EngineError as e:  # an engine that validates lazily (on first iteration)
            error = engine_error(e)
        self._finished = True
        if self._parser is not None and error is None:
            for ev in self._parser.finish():
                _collect(ev, text_parts, calls)
                yield ev
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

    def _make_done(self, reason: str, final: Delta | None, error: Any, calls: list[CallRecord],
                   text: str) -> TurnDone:
        t = final.timing if final is not None and final.timing is not None else Timing(
            prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens)
        now = time.perf_counter()
        timing: dict[str, Any] = {
            "server_received_unix_ms": round(self._received_unix_ms, 3),
            "admission_ms": round(self._admission_ms, 3),
            "render_ms": round(self._render_ms, 3),
            "server_ttft_ms": None if self._first_perf is None
            else round((self._first_perf - self._received_perf) * 1000, 3),
            "server_e2e_ms": round((now - self._received_perf) * 1000, 3),
        }
        timing.update({k: (round(v, 3) if isinstance(v, float) else v)
                       for k, v in t.as_dict().items()})
        spec = final.spec if final is not None else None
        block = {"request_id": self.request_id, "model": self.hub.engine.model_name,
                 "timing": timing, "spec": spec.as_dict() if spec is not None else None}
        usage = Usage(self.prompt_tokens, self.completion_tokens, t.cached_tokens)
        return TurnDone(reason, text, calls, usage, block, error)

    def _log(self) -> None:
        d = self.done
        assert d is not None
        tm = d.turnspec.get("timing", {})
        self.hub.metrics.finished(self.transport, d.finish_reason, d.usage.prompt_tokens,
                                  d.usage.cached_tokens, d.usage.completion_tokens)
        if tm.get("server_ttft_ms") is not None:
            self.hub.metrics.ttft.observe(tm["server_ttft_ms"] / 1000.0)
        log.info("%s %s %s prompt=%d cached=%d completion=%d ttft_ms=%s e2e_ms=%.1f%s",
                 self.transport, self.request_id, d.finish_reason, d.usage.prompt_tokens,
                 d.usage.cached_tokens, d.usage.completion_tokens, tm.get("server_ttft_ms"),
                 tm.get("server_e2e_ms", 0.0), f" error={d.error.message}" if d.error else "")


def _collect(ev: ParseEvent, text_parts: list[str], calls: list[CallRecord]) -> None:
    if isinstance(ev, TextDelta):
        text_parts.append(ev.text)
    elif isinstance(ev, ToolCallDone):
        calls.append(CallRecord(ev.call_id, ev.name, ev.arguments_json))


def engine_error(e: EngineError) -> ApiError:
    """An engine's refusal of a request, as a 400 (the engine says what was wrong)."""
    code = "context_length_exceeded" if isinstance(e, ContextLengthError) else "invalid_request"
    return invalid(str(e), param="messages" if code == "context_length_exceeded" else None,
                   code=code)
