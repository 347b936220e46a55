"""Where one turn's server time went: the marks a turn collects, and the timing block every
transport sends with its terminal event.

The block splits the server's own time into four parts that add up to it exactly:

    server_e2e_ms = host_overhead_ms + queue_ms + prefill_ms + decode_ms

`queue_ms` is the admission wait plus the engine's queue; `prefill_ms` and `decode_ms` are the
engine's; `host_overhead_ms` is the rest (parse, template and tokenize, grammar, handing
tokens across threads, tool-call parsing, serializing and sending). `server_e2e_ms` runs from
the message's arrival to the moment the terminal event is serialized, so a client measures
E2E ~= RTT + server_e2e_ms (docs/architecture.md, "Splitting a client's latency").
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from turnspec.engine.protocol import Timing


def now_us() -> int:
    """Server wall clock in microseconds, the `t_us` every server event carries."""
    return time.time_ns() // 1000


@dataclass(slots=True)
class TurnClock:
    """`time.perf_counter()` marks of one turn on the server (seconds).

    `hops` are the server's own steps before the engine, by name (receive, template, grammar,
    admission: each a (start, end) pair), in the order they ran."""

    received: float
    received_unix_us: int
    hops: dict[str, tuple[float, float]] = field(default_factory=dict)
    first_output: float | None = None    # first text/tool event handed to the transport
    first_sentence: float | None = None  # first spoken clause complete (tools_grammar/sentence.py)
    first_call_done: float | None = None  # first tool call's arguments complete and parsed
    calls: list[tuple[str, float, float]] = field(default_factory=list)  # (name, start, done)
    stamped: float | None = None         # the terminal event is serialized next

    def hop(self, name: str, start: float, end: float) -> None:
        self.hops[name] = (start, end)

    def seconds(self, name: str) -> float:
        start, end = self.hops.get(name, (0.0, 0.0))
        return end - start

    def ms_since_received(self, t: float | None) -> float | None:
        return None if t is None else round((t - self.received) * 1000.0, 3)

    def unix_ns(self, t: float) -> int:
        """A perf_counter mark on the wall clock (for spans), anchored at the arrival."""
        return self.received_unix_us * 1000 + round((t - self.received) * 1e9)


def timing_block(clock: TurnClock, engine: Timing) -> dict[str, Any]:
    """The completion's timing block, its E2E parts provisional until `stamp`."""
    admission_ms = clock.seconds("admission") * 1000.0
    queue = admission_ms + engine.queue_ms
    block: dict[str, Any] = {
        "server_received_unix_ms": round(clock.received_unix_us / 1000.0, 3),
        "server_received_unix_us": clock.received_unix_us,
        "server_ttft_ms": clock.ms_since_received(clock.first_output),
        "ttfs_ms": clock.ms_since_received(clock.first_sentence),
        "tool_call_ms": clock.ms_since_received(clock.first_call_done),
        "server_e2e_ms": 0.0,
        "host_overhead_ms": 0.0,
        "queue_ms": round(queue, 3),
        "prefill_ms": round(engine.prefill_ms, 3),
        "decode_ms": round(engine.decode_ms, 3),
        "admission_ms": round(admission_ms, 3),
        "receive_ms": round(clock.seconds("receive") * 1000.0, 3),
        "render_ms": round(clock.seconds("template") * 1000.0, 3),
        # of it, the loop waiting on a worker thread that tokenized (0: tokenized on the loop)
        "render_wait_ms": round(clock.seconds("template_wait") * 1000.0, 3),
        "grammar_ms": round(clock.seconds("grammar") * 1000.0, 3),  # waiting for its compile
        "engine_queue_ms": round(engine.queue_ms, 3),
        "engine_host_ms": round(engine.engine_host_ms, 3),
        "first_token_ms": round(engine.first_token_ms, 3),
        # SGLang: the way in to its scheduler queue and the first token's way back (else None)
        "engine_in_ms": _round(engine.engine_in_ms),
        "first_back_ms": _round(engine.first_back_ms),
        "received_unix_ms": round(engine.received_unix_ms, 3),
        "prompt_tokens": engine.prompt_tokens,
        "cached_tokens": engine.cached_tokens,
        "prefill_tokens": engine.prefill_tokens,
        "completion_tokens": engine.completion_tokens,
    }
    return block


def _round(ms: float | None) -> float | None:
    return None if ms is None else round(ms, 3)


def stamp(block: dict[str, Any], clock: TurnClock, now: float) -> None:
    """Close the server's E2E at `now` (the terminal event is serialized next) and derive the
    host overhead as what the other three parts leave of it."""
    clock.stamped = now
    e2e = round((now - clock.received) * 1000.0, 3)
    block["server_e2e_ms"] = e2e
    block["host_overhead_ms"] = round(
        e2e - block["queue_ms"] - block["prefill_ms"] - block["decode_ms"], 3)
