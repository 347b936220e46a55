"""One result record per request (sglang bench_serving style); metrics are computed from
these apart from printing (`stats.py`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from turnspec.tools_grammar.sentence import SentenceWatch


def verify_step_ms(block: dict[str, Any]) -> float | None:
    """The server's decode time a verify step, from a completion block (`timing` and `spec`,
    turnspec's or `generate_client.sglang_block`'s): its decode span over its verify steps, what
    one speculative step costs as served. None without both."""
    spec, decode = block.get("spec") or {}, (block.get("timing") or {}).get("decode_ms")
    steps = int(spec.get("verify_steps") or 0)
    return float(decode) / steps if steps and decode is not None else None


@dataclass(slots=True)
class RequestRecord:
    """What one request (one conversation turn) saw from the client side, plus the server's
    `turnspec` block.

    Times are milliseconds from the send (`begin()`). `chunk_ms[i]` is when content chunk i
    (text or tool-call arguments) arrived; `ttft_ms` = `chunk_ms[0]`; `itl_ms` are the gaps
    between consecutive chunks. `chunk_server_us[i]` is the server's send time of that chunk
    (`turnspec.t_us` / gRPC `server_time_us`; 0 when the server sends none). `send_unix_us`
    and the server's `timing.server_received_unix_ms` line up on one host (or synced clocks).
    The runner fills the annotations at the end (conversation, turn, kind, rtt, lags).
    """

    transport: str
    start_unix_ms: float = 0.0
    send_unix_us: int = 0
    ok: bool = False
    error: dict[str, Any] | None = None  # {"code" or "status", "message", ...}
    ttft_ms: float | None = None
    ttfs_ms: float | None = None  # first sentence complete (see SentenceWatch)
    tool_call_ms: float | None = None  # first tool call's arguments complete
    e2e_ms: float | None = None
    chunk_ms: list[float] = field(default_factory=list)
    chunk_server_us: list[int] = field(default_factory=list)
    end_server_us: int = 0  # server send time of the terminal event (0: not sent)
    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {call_id, name, arguments}
    finish_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    turnspec: dict[str, Any] = field(default_factory=dict)  # the completion block
    response_id: str | None = None  # WS: for previous_response_id
    request_id: str | None = None
    cancel_ms: float | None = None  # barge-in: when the client sent its cancel
    cancel_to_stop_ms: float | None = None  # cancel sent -> terminal event (None: unseen)
    # annotations from the runner
    conversation_id: str = ""
    turn: int = 0
    kind: str = ""  # the scripted turn: "tool_call" | "text" | "open"
    rtt_ms: float | None = None  # probe on the same connection just before the send
    arrival_lag_ms: float | None = None  # open loop: actual dispatch - scheduled
    resync: bool = False  # WS: sent the full scripted history instead of continuing
    terminal_ms: float | None = None  # when the terminal event arrived (see `terminal`)
    _t0: float = 0.0
    _sentence: SentenceWatch = field(default_factory=SentenceWatch)

    def begin(self) -> None:
        self.start_unix_ms = time.time() * 1000.0
        self.send_unix_us = time.time_ns() // 1000
        self._t0 = time.perf_counter()

    def now_ms(self) -> float:
        return (time.perf_counter() - self._t0) * 1000.0

    def chunk(self, server_us: int = 0) -> float:
        t = self.now_ms()
        self.chunk_ms.append(t)
        self.chunk_server_us.append(server_us)
        if self.ttft_ms is None:
            self.ttft_ms = t
        return t

    def text_chunk(self, text: str, server_us: int = 0) -> None:
        t = self.chunk(server_us)
        self.text += text
        if self._sentence.feed(text):
            self.ttfs_ms = t

    def tool_done(self) -> None:
        if self.tool_call_ms is None:
            self.tool_call_ms = self.now_ms()

    def cancel_sent(self) -> None:
        self.cancel_ms = self.now_ms()

    def terminal(self) -> None:
        """The terminal event arrived (gRPC `complete`, SSE `[DONE]`): E2E ends here, not at
        the stream's close after it (gRPC trailers, the chunked body's end), which is another
        server write and another client wake-up that no server part or RTT covers."""
        if self.terminal_ms is None:
            self.terminal_ms = self.now_ms()

    def end(self, ok: bool, server_us: int = 0) -> RequestRecord:
        self.e2e_ms = self.terminal_ms if self.terminal_ms is not None else self.now_ms()
        if ok and self.cancel_ms is None and self._sentence.finish():  # ended on a terminator
            self.ttfs_ms = self.e2e_ms
        self.end_server_us = server_us or self.end_server_us
        if self.cancel_ms is not None and self.transport not in ("http", "generate"):
            self.cancel_to_stop_ms = self.e2e_ms - self.cancel_ms
        self.ok = ok
        return self

    def fail(self, error: dict[str, Any]) -> RequestRecord:
        self.error = error
        return self.end(False)

    @property
    def itl_ms(self) -> list[float]:
        c = self.chunk_ms
        return [b - a for a, b in zip(c, c[1:], strict=False)]

    @property
    def timing(self) -> dict[str, Any]:
        return self.turnspec.get("timing") or {}

    @property
    def tau(self) -> float | None:
        spec = self.turnspec.get("spec") or {}
        return spec.get("tau") if spec.get("verify_steps") else None

    @property
    def step_ms(self) -> float | None:
        return verify_step_ms(self.turnspec)

    @property
    def spec_counts(self) -> tuple[int, int] | None:
        """(committed tokens, verify steps) of a speculative turn, else None."""
        spec = self.turnspec.get("spec") or {}
        steps = int(spec.get("verify_steps") or 0)
        return (int(spec.get("committed_tokens") or 0), steps) if steps else None

    @property
    def output_tokens(self) -> int | None:
        """From the server's usage (chat: completion_tokens, Responses: output_tokens)."""
        u = self.usage
        n = u.get("completion_tokens", u.get("output_tokens"))
        return int(n) if n is not None else None

    @property
    def cancelled(self) -> bool:
        return self.cancel_ms is not None

    def as_dict(self) -> dict[str, Any]:
        return {"transport": self.transport, "ok": self.ok, "error": self.error,
                "conversation_id": self.conversation_id, "turn": self.turn, "kind": self.kind,
                "start_unix_ms": self.start_unix_ms, "send_unix_us": self.send_unix_us,
                "ttft_ms": self.ttft_ms, "ttfs_ms": self.ttfs_ms,
                "tool_call_ms": self.tool_call_ms, "e2e_ms": self.e2e_ms,
                "itl_ms": self.itl_ms, "rtt_ms": self.rtt_ms, "text": self.text,
                "tool_calls": self.tool_calls, "finish_reason": self.finish_reason,
                "usage": self.usage, "turnspec": self.turnspec,
                "cancel_ms": self.cancel_ms, "cancel_to_stop_ms": self.cancel_to_stop_ms,
                "response_id": self.response_id, "request_id": self.request_id}
