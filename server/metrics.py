"""`GET /metrics`: Prometheus text from prometheus_client, one registry per server.

The GenAI semantic conventions' server metrics (`gen_ai.server.time_to_first_token`,
`gen_ai.server.time_per_output_token`, `gen_ai.server.request.duration`) in Prometheus naming,
with the conventions' attributes as labels (`gen_ai_operation_name`, `gen_ai_provider_name`,
`gen_ai_request_model`: the served model, whatever name a request gave) beside `transport`;
turnspec's own names only where the conventions have none: the voice measures (time to first
sentence, tool-call latency), queue time, the accepted length of every verify step (tau),
request outcomes, rejections and errors by type; gauges (readiness, admission, engine
sequences and KV blocks) are read at scrape time. Everything is observed on the event loop,
once per turn. deploy/grafana/turnspec.json charts these names (tests/deploy checks it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from turnspec.engine.protocol import EngineStats, SpecStats

disable_created_metrics()  # no `_created` series beside every counter and histogram

# OTel GenAI semconv explicit bucket boundaries, in seconds (advice, not a requirement).
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                7.5, 10.0)
# The conventions start time per output token at 10 ms; a GPU decodes a small model in 2-5 ms
# a token, so three finer buckets below keep its p50/p90 from collapsing into the first one.
TPOT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5)
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48,
                    40.96, 81.92)
REFUSAL_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1)
ACCEPTED_BUCKETS = tuple(float(k) for k in range(1, 17))  # tokens a verify step commits
OPERATION = "chat"  # gen_ai.operation.name of every transport's turn (as the trace's root span)
PROVIDER = "turnspec"  # gen_ai.provider.name (as the trace's root span)
GEN_AI_LABELS = ("gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model",
                 "transport")


@dataclass(slots=True, frozen=True)
class ServerState:
    """What the gauges read at scrape time."""

    ready: bool
    draining: bool
    running: int
    queued: int
    ws_connections: int = 0
    engine_failed: bool = False


class _Gauges(Collector):
    """Readiness, admission and engine gauges, read when Prometheus scrapes."""

    def __init__(self, state: Callable[[], ServerState],
                 engine_stats: Callable[[], EngineStats]) -> None:
        self._state = state
        self._engine_stats = engine_stats

    def collect(self) -> Iterator[GaugeMetricFamily]:
        st = self._state()
        for name, value, doc in (
                ("turnspec_ready", st.ready, "1 once the engine is warm"),
                ("turnspec_draining", st.draining, "1 while shutting down"),
                ("turnspec_running_turns", st.running, "turns handed to the engine"),
                ("turnspec_queued_turns", st.queued, "turns waiting for admission"),
                ("turnspec_ws_connections", st.ws_connections, "open WebSocket connections"),
                ("turnspec_engine_failed", st.engine_failed,
                 "1 once the engine died (the server is exiting)")):
            yield GaugeMetricFamily(name, doc, value=float(value))
        if not st.ready:
            return
        s = self._engine_stats()
        for name, value, doc in (
                ("turnspec_engine_active_sequences", s.active_sequences, "sequences running"),
                ("turnspec_engine_waiting_sequences", s.waiting_sequences, "sequences queued"),
                ("turnspec_engine_free_kv_blocks", s.free_kv_blocks, "KV blocks free"),
                ("turnspec_engine_used_kv_blocks", s.total_kv_blocks - s.free_kv_blocks,
                 "KV blocks held by sequences"),
                ("turnspec_engine_total_kv_blocks", s.total_kv_blocks, "KV blocks in the pool"),
                ("turnspec_engine_cached_kv_blocks", s.cached_kv_blocks,
                 "free KV blocks still holding reusable prefix KV")):
            yield GaugeMetricFamily(name, doc, value=float(value))


class Metrics:
    def __init__(self, state: Callable[[], ServerState],
                 engine_stats: Callable[[], EngineStats], model: str) -> None:
        self.model = model
        r = self.registry = CollectorRegistry()
        self.requests = Counter("turnspec_requests", "Turns by transport and outcome",
                                ("transport", "outcome"), registry=r)
        self.rejections = Counter("turnspec_rejections", "Requests refused before streaming",
                                  ("transport", "code"), registry=r)
        self.errors = Counter("turnspec_errors", "Failed turns and rejections by error type",
                              ("type",), registry=r)
        self.prompt_tokens = Counter("turnspec_prompt_tokens", "Prompt tokens", registry=r)
        self.cached_tokens = Counter("turnspec_cached_prompt_tokens",
                                     "Prompt tokens served from the prefix cache", registry=r)
        self.completion_tokens = Counter("turnspec_completion_tokens", "Output tokens",
                                         registry=r)
        self.continued = Counter("turnspec_continued_turns",
                                 "Turns continuing a stored conversation", registry=r)
        self.ttft = Histogram("gen_ai_server_time_to_first_token_seconds",
                              "Server receive -> first token handed to the transport",
                              GEN_AI_LABELS, buckets=TTFT_BUCKETS, registry=r)
        self.tpot = Histogram("gen_ai_server_time_per_output_token_seconds",
                              "Decode time per output token after the first", GEN_AI_LABELS,
                              buckets=TPOT_BUCKETS, registry=r)
        self.duration = Histogram("gen_ai_server_request_duration_seconds",
                                  "Server receive -> terminal event", GEN_AI_LABELS,
                                  buckets=DURATION_BUCKETS, registry=r)
        self.queue = Histogram("turnspec_queue_time_seconds",
                               "Admission wait + engine queue", buckets=TTFT_BUCKETS, registry=r)
        self.ttfs = Histogram("turnspec_time_to_first_sentence_seconds",
                              "Server receive -> first spoken sentence complete",
                              ("transport",), buckets=TTFT_BUCKETS, registry=r)
        self.tool_call = Histogram("turnspec_tool_call_latency_seconds",
                                   "Server receive -> first tool call's arguments parsed",
                                   ("transport",), buckets=TTFT_BUCKETS, registry=r)
        self.accepted = Histogram("turnspec_spec_accepted_length",
                                  "Tokens each speculative verify step committed",
                                  buckets=ACCEPTED_BUCKETS, registry=r)
        self.refusal = Histogram("turnspec_refusal_seconds",
                                 "Server receive -> refusal of a turn (admission, limits)",
                                 ("transport", "code"), buckets=REFUSAL_BUCKETS, registry=r)
        r.register(_Gauges(state, engine_stats))

    def finished(self, transport: str, outcome: str, timing: dict[str, Any],
                 spec: SpecStats | None, error_type: str | None) -> None:
        """One turn ended (its block stamped): outcome, tokens, latencies, verify steps."""
        self.requests.labels(transport, outcome).inc()
        self.prompt_tokens.inc(timing.get("prompt_tokens") or 0)
        self.cached_tokens.inc(timing.get("cached_tokens") or 0)
        completion = timing.get("completion_tokens") or 0
        self.completion_tokens.inc(completion)
        if error_type is not None:
            self.errors.labels(error_type).inc()
        gen_ai = (OPERATION, PROVIDER, self.model, transport)
        self.duration.labels(*gen_ai).observe(timing["server_e2e_ms"] / 1000.0)
        self.queue.observe(timing["queue_ms"] / 1000.0)
        if timing.get("server_ttft_ms") is not None:
            self.ttft.labels(*gen_ai).observe(timing["server_ttft_ms"] / 1000.0)
        for hist, key in ((self.ttfs, "ttfs_ms"), (self.tool_call, "tool_call_ms")):
            if timing.get(key) is not None:
                hist.labels(transport).observe(timing[key] / 1000.0)
        if completion > 1:
            self.tpot.labels(*gen_ai).observe(timing["decode_ms"] / 1000.0 / (completion - 1))
        if spec is not None:
            for n in spec.step_lengths:
                self.accepted.observe(n)

    def rejected(self, transport: str, code: str) -> None:
        self.requests.labels(transport, code).inc()
        self.rejections.labels(transport, code).inc()
        self.errors.labels(code).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
