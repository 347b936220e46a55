"""A real OTLP/gRPC trace receiver on 127.0.0.1, built on opentelemetry-proto's generated
service: what `turnspec bench frontend --trace` exports to, and what the tracing tests read.
It keeps the spans it receives (for a bench, `keep=False` counts them only)."""

from __future__ import annotations

import threading
from concurrent import futures
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc


class OtlpSink(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, keep: bool = True) -> None:
        self.keep = keep
        self.spans: list[Any] = []  # opentelemetry.proto.trace.v1 Span messages
        self.count = 0
        self._lock = threading.Lock()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def Export(self, request: Any, context: Any) -> Any:  # noqa: N802 (the generated name)
        spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
        with self._lock:
            self.count += len(spans)
            if self.keep:
                self.spans.extend(spans)
        return trace_service_pb2.ExportTraceServiceResponse()

    def stop(self) -> None:
        self.server.stop(None)
