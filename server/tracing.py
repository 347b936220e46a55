"""OpenTelemetry traces of voice turns: where every millisecond of a turn went.

One root span per turn (`chat {model}`, kind SERVER, OTel GenAI attributes), the child of the
client's span when the request carried W3C `traceparent` (HTTP headers, gRPC metadata or
`trace_headers`, the WebSocket upgrade, or a `response.create`'s own field, which wins). Its
children are the hops, in order:

    turnspec.receive        the transport parsed the message
    turnspec.template       chat template + tokenize (KV-reuse continuation included)
    turnspec.grammar        the tool-call grammar matcher (compiled or from the cache)
    turnspec.admission      waiting for an admission slot
    turnspec.engine.queue   engine accepted -> first scheduled
    turnspec.engine.prefill first scheduled -> first token (prompt, cached, prefilled tokens)
    turnspec.engine.decode  first token -> last (tokens, verify steps, tau; one `verify` event
                            per speculative step with the tokens it committed)
    turnspec.tool_call      a call's first token -> its arguments complete and parsed
    turnspec.send           first output handed to the transport -> terminal event serialized

The engine's phases run on its own thread; they are placed in the request's trace from the
times the engine reports with the final delta, so nothing crosses threads. Off by default:
with no provider no span, context or attribute is built.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
)
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

if TYPE_CHECKING:
    from turnspec.engine.protocol import SpecStats, Timing
    from turnspec.server.events import TurnDone
    from turnspec.server.timing import TurnClock

log = logging.getLogger("turnspec.server")

OTLP_PROTOCOLS = ("grpc", "http/protobuf")
_PROPAGATOR = TraceContextTextMapPropagator()


@dataclass(slots=True, frozen=True)
class TracingConfig:
    """`--otlp-endpoint URL` (OTLP over gRPC, or HTTP/protobuf with `--otlp-protocol`, or when
    the URL's path is `/v1/traces`), `--trace-console`, `--trace-sample RATIO`."""

    otlp_endpoint: str | None = None
    otlp_protocol: str = "grpc"
    console: bool = False
    sample_ratio: float = 1.0

    def __post_init__(self) -> None:
        if self.otlp_protocol not in OTLP_PROTOCOLS:
            raise ValueError(f"otlp_protocol: expected one of {OTLP_PROTOCOLS}, got "
                             f"{self.otlp_protocol!r}")
        if not 0.0 <= self.sample_ratio <= 1.0:
            raise ValueError(f"trace_sample: expected a ratio in [0, 1], got {self.sample_ratio}")
        if self.otlp_endpoint is not None:
            url = urlparse(self.otlp_endpoint)
            if url.scheme not in ("http", "https") or not url.hostname:
                raise ValueError(f"otlp_endpoint: expected http://HOST:PORT or https://HOST:PORT, "
                                 f"got {self.otlp_endpoint!r}")

    @property
    def enabled(self) -> bool:
        return self.otlp_endpoint is not None or self.console

    @property
    def protocol(self) -> str:
        path = urlparse(self.otlp_endpoint or "").path
        return "http/protobuf" if path.rstrip("/").endswith("/v1/traces") else self.otlp_protocol


def build_tracer_provider(cfg: TracingConfig, service: str = "turnspec") -> TracerProvider | None:
    """The server's own provider (never the global one), or None when tracing is off."""
    if not cfg.enabled:
        return None
    provider = TracerProvider(resource=Resource.create({"service.name": service}),
                              sampler=ParentBased(TraceIdRatioBased(cfg.sample_ratio)))
    if cfg.otlp_endpoint is not None:
        if cfg.protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter(endpoint=cfg.otlp_endpoint,
                                        insecure=cfg.otlp_endpoint.startswith("http://"))
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                OTLPSpanExporter as HttpSpanExporter,
            )

            url = cfg.otlp_endpoint.rstrip("/")
            exporter = HttpSpanExporter(endpoint=url if url.endswith("/v1/traces")
                                        else url + "/v1/traces")
        # ~9 spans a turn: room for ~900 turns between exports (5 s) before any is dropped
        provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=8192,
                                                       max_export_batch_size=1024))
    if cfg.console:
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    return provider


def trace_id_of(carrier: dict[str, str] | None) -> str | None:
    """The W3C trace id a request carried (32 hex), for the log line when nothing is traced."""
    ctx = trace.get_current_span(_PROPAGATOR.extract(carrier or {})).get_span_context()
    return format(ctx.trace_id, "032x") if ctx.is_valid else None


class TurnTracer:
    """Builds each turn's spans on the event loop; see the module docstring for the tree."""

    def __init__(self, provider: TracerProvider) -> None:
        self._tracer = provider.get_tracer("turnspec.server")

    def start(self, carrier: dict[str, str] | None, clock: TurnClock, transport: str,
              model: str) -> Span:
        """The turn's root span, from the message's arrival, under the client's context."""
        ctx = _PROPAGATOR.extract(carrier) if carrier else None
        return self._tracer.start_span(
            f"chat {model}", context=ctx, kind=SpanKind.SERVER,
            start_time=clock.unix_ns(clock.received),
            attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                        "gen_ai.provider.name": "turnspec", "turnspec.transport": transport})

    def refused(self, root: Span, code: str, message: str, end: float, clock: TurnClock) -> None:
        """The turn was refused before streaming (validation, admission, auth)."""
        root.set_attribute("error.type", code)
        root.set_status(Status(StatusCode.ERROR, message))
        root.end(end_time=clock.unix_ns(end))

    def finish(self, root: Span, clock: TurnClock, done: TurnDone, engine: Timing | None,
               spec: SpecStats | None, response_id: str) -> None:
        """Children from the turn's marks and the engine's reported phases; then the root."""
        if not root.is_recording():
            root.end(end_time=clock.unix_ns(clock.stamped or clock.received))
            return
        ctx = trace.set_span_in_context(root)
        for name, (start, end) in clock.hops.items():
            self._child(ctx, f"turnspec.{name}", clock, start, end)
        t = done.turnspec.get("timing", {})
        if engine is not None and engine.accepted_at:
            self._engine_spans(ctx, clock, engine, spec, t)
        for name, start, end in clock.calls:
            self._child(ctx, "turnspec.tool_call", clock, start, end,
                        {"gen_ai.tool.name": name, "turnspec.tool_call_ms":
                         round((end - clock.received) * 1000.0, 3)})
        if clock.first_output is not None and clock.stamped is not None:
            self._child(ctx, "turnspec.send", clock, clock.first_output, clock.stamped,
                        {"turnspec.server_ttft_ms": t.get("server_ttft_ms")})
        root.set_attributes(_root_attributes(done, t, spec, response_id))
        if done.error is not None:
            root.set_attribute("error.type", done.error.code or done.error.type)
            root.set_status(Status(StatusCode.ERROR, done.error.message))
        root.end(end_time=clock.unix_ns(clock.stamped or clock.received))

    def _engine_spans(self, ctx: Any, clock: TurnClock, engine: Timing, spec: SpecStats | None,
                      t: dict[str, Any]) -> None:
        scheduled = engine.accepted_at + engine.queue_ms / 1000.0
        first = scheduled + engine.prefill_ms / 1000.0
        last = first + engine.decode_ms / 1000.0
        self._child(ctx, "turnspec.engine.queue", clock, engine.accepted_at, scheduled)
        self._child(ctx, "turnspec.engine.prefill", clock, scheduled, first, {
            "gen_ai.usage.input_tokens": engine.prompt_tokens,
            "turnspec.cached_tokens": engine.cached_tokens,
            "turnspec.prefill_tokens": engine.prefill_tokens})
        attrs: dict[str, Any] = {"gen_ai.usage.output_tokens": engine.completion_tokens,
                                 "turnspec.engine_host_ms": t.get("engine_host_ms")}
        if spec is not None:
            attrs |= {"turnspec.spec.verify_steps": spec.verify_steps,
                      "turnspec.spec.tau": round(spec.tau, 4)}
        decode = self._tracer.start_span("turnspec.engine.decode", context=ctx,
                                         start_time=clock.unix_ns(first), attributes=attrs)
        if spec is not None and spec.step_times:
            for n, at in zip(spec.step_lengths, spec.step_times, strict=False):
                decode.add_event("verify", {"turnspec.spec.committed": n},
                                 timestamp=clock.unix_ns(at))
        decode.end(end_time=clock.unix_ns(last))

    def _child(self, ctx: Any, name: str, clock: TurnClock, start: float, end: float,
               attributes: dict[str, Any] | None = None) -> None:
        span = self._tracer.start_span(name, context=ctx, start_time=clock.unix_ns(start),
                                       attributes={k: v for k, v in (attributes or {}).items()
                                                   if v is not None})
        span.end(end_time=clock.unix_ns(max(start, end)))


def _root_attributes(done: TurnDone, t: dict[str, Any], spec: SpecStats | None,
                     response_id: str) -> dict[str, Any]:
    u = done.usage
    attrs: dict[str, Any] = {
        "gen_ai.response.id": response_id,
        "gen_ai.response.finish_reasons": [done.finish_reason],
        "gen_ai.usage.input_tokens": u.prompt_tokens,
        "gen_ai.usage.output_tokens": u.completion_tokens,
        "gen_ai.usage.cache_read.input_tokens": u.cached_tokens,
        "turnspec.request_id": done.turnspec.get("request_id", ""),
    }
    for key in ("server_ttft_ms", "ttfs_ms", "tool_call_ms", "server_e2e_ms", "queue_ms",
                "prefill_ms", "decode_ms", "host_overhead_ms"):
        if t.get(key) is not None:
            attrs[f"turnspec.{key}"] = t[key]
    if spec is not None:
        attrs["turnspec.spec.tau"] = round(spec.tau, 4)
        attrs["turnspec.spec.verify_steps"] = spec.verify_steps
    return attrs
