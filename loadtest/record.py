"""One result record per request (sglang bench_serving style); metrics are computed from
these apart from printing."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class RequestRecord:
    """What one request saw from the client side, plus the server's `turnspec` block.

    Times are milliseconds. `chunk_ms[i]` is when content chunk i (text or tool-call
    arguments) arrived, measured from the send; `ttft_ms` = `chunk_ms[0]`; `itl_ms` are the
    gaps between consecutive chunks. `start_unix_ms` lets a reader line client times up with
    the server's `timing.server_received_unix_ms` (same host, or synced clocks).
    """

    transport: str
    start_unix_ms: float = 0.0
    ok: bool = False
    error: dict[str, Any] | None = None  # {"status"/"code", "message", ...}
    ttft_ms: float | None = None
    e2e_ms: float | None = None
    chunk_ms: list[float] = field(default_factory=list)
    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {call_id, name, arguments}
    finish_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    turnspec: dict[str, Any] = field(default_factory=dict)
    response_id: str | None = None  # WS: for previous_response_id
    request_id: str | None = None
    _t0: float = 0.0

    def begin(self) -> None:
        self.start_unix_ms = time.time() * 1000.0
        self._t0 = time.perf_counter()

    def chunk(self) -> None:
        self.chunk_ms.append((time.perf_counter() - self._t0) * 1000.0)
        if self.ttft_ms is None:
            self.ttft_ms = self.chunk_ms[0]

    def end(self, ok: bool) -> RequestRecord:
        self.e2e_ms = (time.perf_counter() - self._t0) * 1000.0
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

    def as_dict(self) -> dict[str, Any]:
        return {"transport": self.transport, "ok": self.ok, "error": self.error,
                "start_unix_ms": self.start_unix_ms, "ttft_ms": self.ttft_ms,
                "e2e_ms": self.e2e_ms, "itl_ms": self.itl_ms, "text": self.text,
                "tool_calls": self.tool_calls, "finish_reason": self.finish_reason,
                "usage": self.usage, "turnspec": self.turnspec,
                "response_id": self.response_id, "request_id": self.request_id}
