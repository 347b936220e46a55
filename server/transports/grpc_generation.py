"""gRPC transport: `turnspec.v1.Generation` (Generate, Abort), standard health and reflection.

Errors are status codes (see generation.proto). A client cancel or an expired deadline
cancels the handler task; the turn's `close()` then aborts the engine request.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import grpc
from google.protobuf.message import DecodeError
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio
from grpc_reflection.v1alpha import reflection

from turnspec.server.conversation import messages_from_chat
from turnspec.server.errors import ApiError, invalid, unexpected
from turnspec.server.events import TurnDone
from turnspec.server.hub import SessionHub
from turnspec.server.proto.turnspec.v1 import generation_pb2 as pb
from turnspec.server.proto.turnspec.v1 import generation_pb2_grpc as pb_grpc
from turnspec.server.session import Session, TurnRequest
from turnspec.server.timing import now_us
from turnspec.server.tls import grpc_server_credentials
from turnspec.tools_grammar.parser import (
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallDone,
    ToolCallInvalid,
    ToolCallStarted,
)

log = logging.getLogger("turnspec.server")
SERVICE_NAME = pb.DESCRIPTOR.services_by_name["Generation"].full_name  # turnspec.v1.Generation


def _metadata(context: grpc.aio.ServicerContext) -> dict[str, str]:
    return {k.lower(): v for k, v in (context.invocation_metadata() or ())
            if isinstance(v, str)}


async def _abort(context: grpc.aio.ServicerContext, err: ApiError) -> None:
    trailing = ()
    if err.retry_after_s is not None:
        trailing = (("retry-after-ms", str(int(err.retry_after_s * 1000))),)
    code = getattr(grpc.StatusCode, err.grpc_code)
    await context.abort(code, f"{err.code or err.type}: {err.message}", trailing_metadata=trailing)


def _api_error(e: Exception, where: str) -> ApiError:
    if isinstance(e, ApiError):
        return e
    log.exception("grpc %s failed", where)  # a bug: logged, answered as INTERNAL
    return unexpected(e)


def turn_request(msg: pb.GenerateRequest, meta: dict[str, str], received_unix_ms: float,
                 received_perf: float) -> TurnRequest:
    """Proto request -> TurnRequest; raises 400 `ApiError`s naming the field."""
    messages = messages_from_chat([_message(m) for m in msg.messages])
    tools = []
    for i, t in enumerate(msg.tools):
        fn: dict[str, Any] = {"name": t.name, "description": t.description}
        if t.parameters_json:
            try:
                fn["parameters"] = json.loads(t.parameters_json)
            except (ValueError, RecursionError) as e:
                raise invalid(f"tools[{i}].parameters_json: expected a JSON Schema object as "
                              f"text, could not parse it ({type(e).__name__}: {e})",
                              param=f"tools[{i}].parameters_json") from None
        tools.append({"type": "function", "function": fn})
    which = msg.tool_choice.WhichOneof("choice") if msg.HasField("tool_choice") else None
    choice: Any = None
    if which == "mode":
        choice = msg.tool_choice.mode
    elif which == "function_name":
        choice = {"type": "function", "function": {"name": msg.tool_choice.function_name}}
    s = msg.sampling
    temperature = s.temperature if s.HasField("temperature") else None
    if temperature is not None and not 0.0 <= temperature <= 2.0:
        raise invalid(f"sampling.temperature: expected a number in [0, 2], got {temperature}",
                      param="sampling.temperature")
    top_p = s.top_p if s.HasField("top_p") else None
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise invalid(f"sampling.top_p: expected a number in (0, 1], got {top_p}",
                      param="sampling.top_p")
    max_tokens = s.max_tokens if s.HasField("max_tokens") else None
    if max_tokens == 0:
        raise invalid("sampling.max_tokens: expected >= 1 (or unset for the default)",
                      param="sampling.max_tokens")
    if any(not x for x in s.stop):
        raise invalid("sampling.stop: expected non-empty strings", param="sampling.stop")
    trace = {k: v for k, v in msg.trace_headers.items()}
    trace.update({k: meta[k] for k in ("traceparent", "tracestate") if k in meta})
    return TurnRequest(
        messages=messages, tools=tools or None, tool_choice=choice,
        temperature=temperature, top_p=top_p,
        top_k=s.top_k if s.HasField("top_k") else None,
        seed=s.seed if s.HasField("seed") else None, max_tokens=max_tokens,
        stop=tuple(s.stop),
        parallel_tool_calls=(msg.parallel_tool_calls if msg.HasField("parallel_tool_calls")
                             else None),
        request_id=msg.request_id or None,
        spec_block_size=msg.spec_block_size if msg.HasField("spec_block_size") else None,
        trace=trace or None, received_unix_ms=received_unix_ms, received_perf=received_perf)


def _message(m: pb.Message) -> dict[str, Any]:
    d: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        d["tool_calls"] = [{"id": c.id, "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments_json}}
                           for c in m.tool_calls]
    if m.role == "tool":
        d["tool_call_id"] = m.tool_call_id
    return d


def complete_message(done: TurnDone) -> pb.Complete:
    t = done.turnspec.get("timing", {})
    fields = pb.Timing.DESCRIPTOR.fields_by_name
    timing = pb.Timing(**{k: v for k, v in t.items() if k in fields and v is not None})
    c = pb.Complete(finish_reason=done.finish_reason, timing=timing,
                    model=done.turnspec.get("model", ""))
    spec = done.turnspec.get("spec")
    if spec:
        c.spec.CopyFrom(pb.SpecStats(**spec))
    return c


class Undecodable:
    """A request body that is not the method's message: grpc would answer UNKNOWN; the
    servicer answers INVALID_ARGUMENT instead (`lenient`)."""

    def __init__(self, what: str, error: str) -> None:
        self.error = invalid(f"request: expected a serialized {what}, could not parse it "
                             f"({error})", code="invalid_protobuf")


def lenient(message: Any) -> Any:
    name = message.DESCRIPTOR.full_name

    def parse(raw: bytes) -> Any:
        try:
            return message.FromString(raw)
        except DecodeError as e:
            return Undecodable(name, str(e))
    return parse


def _add_generation(servicer: GenerationService, server: grpc.aio.Server) -> None:
    """`add_GenerationServicer_to_server`, with request parsing that cannot raise."""
    handlers = {
        "Generate": grpc.unary_stream_rpc_method_handler(
            servicer.Generate, request_deserializer=lenient(pb.GenerateRequest),
            response_serializer=pb.GenerateResponse.SerializeToString),
        "Abort": grpc.unary_unary_rpc_method_handler(
            servicer.Abort, request_deserializer=lenient(pb.AbortRequest),
            response_serializer=pb.AbortResponse.SerializeToString)}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME,
                                                                          handlers),))
    server.add_registered_method_handlers(SERVICE_NAME, handlers)


class GenerationService(pb_grpc.GenerationServicer):
    def __init__(self, hub: SessionHub) -> None:
        self.hub = hub

    async def Generate(self, request: pb.GenerateRequest,
                       context: grpc.aio.ServicerContext) -> Any:
        received_unix_ms, received_perf = time.time() * 1000.0, time.perf_counter()
        hub = self.hub
        meta = _metadata(context)
        try:
            hub.check_auth(meta.get("authorization"))
            if isinstance(request, Undecodable):
                raise request.error
            req = turn_request(request, meta, received_unix_ms, received_perf)
        except Exception as e:
            err = _api_error(e, "request parsing")
            hub.rejected("grpc", err)
            await _abort(context, err)
            return
        try:
            turn = await Session(hub, "grpc").start(req)
        except Exception as e:
            await _abort(context, _api_error(e, "turn start"))
            return
        rid = turn.request_id
        try:
            async for ev in turn.events():
                out = pb.GenerateResponse(request_id=rid, usage=pb.Usage(
                    prompt_tokens=turn.prompt_tokens, completion_tokens=turn.completion_tokens))
                if isinstance(ev, TextDelta):
                    out.delta.text = ev.text
                elif isinstance(ev, ToolCallArgumentsDelta):
                    out.tool_call_delta.CopyFrom(pb.ToolCallDelta(
                        index=ev.index, call_id=ev.call_id, arguments_delta=ev.delta))
                elif isinstance(ev, ToolCallStarted):
                    out.tool_call_delta.CopyFrom(pb.ToolCallDelta(
                        index=ev.index, call_id=ev.call_id, name=ev.name))
                elif isinstance(ev, ToolCallDone):
                    out.tool_call_delta.CopyFrom(pb.ToolCallDelta(
                        index=ev.index, call_id=ev.call_id, name=ev.name, done=True,
                        arguments_json=ev.arguments_json))
                elif isinstance(ev, ToolCallInvalid):
                    out.tool_call_delta.CopyFrom(pb.ToolCallDelta(
                        index=ev.index, call_id=ev.call_id, done=True, error=ev.error))
                elif isinstance(ev, TurnDone):
                    if ev.error is not None:
                        await _abort(context, ev.error)
                        return
                    out.usage.cached_tokens = ev.usage.cached_tokens
                    turn.stamp(ev)
                    out.complete.CopyFrom(complete_message(ev))
                out.server_time_us = now_us()
                yield out
        finally:
            await turn.close()

    async def Abort(self, request: pb.AbortRequest,
                    context: grpc.aio.ServicerContext) -> pb.AbortResponse:
        try:
            self.hub.check_auth(_metadata(context).get("authorization"))
            if isinstance(request, Undecodable):
                raise request.error
        except ApiError as e:
            self.hub.rejected("grpc", e)
            await _abort(context, e)
        return pb.AbortResponse(found=await self.hub.abort(request.request_id))


class GrpcServer:
    """The grpc.aio server with Generation, health (NOT_SERVING until warm) and reflection."""

    def __init__(self, hub: SessionHub) -> None:
        self.hub = hub
        limit = hub.config.max_message_bytes
        self.server = grpc.aio.server(options=[
            ("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", limit),
            ("grpc.so_reuseport", 0),  # a second server on the same port must fail, not share
            ("grpc.max_concurrent_streams", hub.config.grpc_streams_per_connection),
            # Long prefills: allow client keepalive pings every 10 s without GOAWAY.
            ("grpc.http2.min_recv_ping_interval_without_data_ms", 10_000),
            ("grpc.keepalive_permit_without_calls", 1),
        ])
        _add_generation(GenerationService(hub), self.server)
        self.health = health_aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
             reflection.SERVICE_NAME), self.server)
        hub.on_serving_change(self._set_serving)
        self.port = 0

    async def start(self, host: str, port: int) -> int:
        for name in ("", SERVICE_NAME):
            await self.health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        cfg = self.hub.config
        if cfg.tls_cert is not None and cfg.tls_key is not None:
            self.port = self.server.add_secure_port(
                f"{host}:{port}", grpc_server_credentials(cfg.tls_cert, cfg.tls_key))
        else:
            self.port = self.server.add_insecure_port(f"{host}:{port}")
        if self.port == 0:
            raise OSError(f"gRPC could not bind {host}:{port}")
        await self.server.start()
        return self.port

    async def _set_serving(self, serving: bool) -> None:
        if serving:
            for name in ("", SERVICE_NAME):
                await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        else:
            await self.health.enter_graceful_shutdown()

    async def stop(self, grace: float | None) -> None:
        await self.server.stop(grace)
