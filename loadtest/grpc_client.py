"""`GenerationClient`: gRPC `turnspec.v1.Generation/Generate` from the committed .proto's stubs
(the public contract), with `grpc.health.v1.Health/Check` on the same channel for the RTT."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from turnspec.loadtest.record import RequestRecord
from turnspec.loadtest.wire import INCOMPLETE, ms_since
from turnspec.server.proto.turnspec.v1 import generation_pb2 as pb
from turnspec.server.proto.turnspec.v1 import generation_pb2_grpc as pb_grpc


def _proto_messages(messages: list[dict[str, Any]]) -> list[pb.Message]:
    out = []
    for m in messages:
        calls = [pb.ToolCall(id=c.get("id", ""), name=c["function"]["name"],
                             arguments_json=c["function"].get("arguments", ""))
                 for c in m.get("tool_calls") or ()]
        out.append(pb.Message(role=m["role"], content=m.get("content") or "", tool_calls=calls,
                              tool_call_id=m.get("tool_call_id", "")))
    return out


def _proto_tools(tools: list[dict[str, Any]] | None) -> list[pb.Tool]:
    out = []
    for t in tools or ():
        fn = t.get("function", t)
        out.append(pb.Tool(name=fn["name"], description=fn.get("description", ""),
                           parameters_json=json.dumps(fn.get("parameters") or {})))
    return out


def _fields(msg: Any) -> dict[str, Any]:
    """A message as a dict; unset `optional` fields (e.g. Timing.ttfs_ms) are None."""
    return {f.name: None if f.has_presence and not msg.HasField(f.name) else getattr(msg, f.name)
            for f in msg.DESCRIPTOR.fields}


class GenerationClient:
    def __init__(self, target: str, api_key: str | None = None):
        self.channel = grpc.aio.insecure_channel(target)
        self.stub = pb_grpc.GenerationStub(self.channel)
        self.health = health_pb2_grpc.HealthStub(self.channel)
        self._metadata = (("authorization", f"Bearer {api_key}"),) if api_key else ()
        self._aborts: set[asyncio.Task[Any]] = set()

    async def probe_rtt(self, timeout_s: float = 10.0) -> float | None:
        """`grpc.health.v1.Health/Check` on the same channel (HTTP/2 connection)."""
        t0 = time.perf_counter()
        try:
            await self.health.Check(health_pb2.HealthCheckRequest(service=""),
                                    timeout=timeout_s)
        except grpc.aio.AioRpcError:
            return None
        return ms_since(t0)

    async def generate(self, messages: list[dict[str, Any]], *, tools: list[dict] | None = None,
                       tool_choice: str | None = None, max_tokens: int | None = None,
                       temperature: float | None = None, request_id: str = "",
                       timeout_s: float | None = None,
                       cancel_after_chunks: int | None = None) -> RequestRecord:
        request_id = request_id or f"lt-{uuid.uuid4().hex[:20]}"  # Abort needs it (barge-in)
        req = pb.GenerateRequest(request_id=request_id, messages=_proto_messages(messages),
                                 tools=_proto_tools(tools))
        if tool_choice in ("auto", "none", "required"):
            req.tool_choice.mode = tool_choice
        elif tool_choice:
            req.tool_choice.function_name = tool_choice
        if max_tokens is not None:
            req.sampling.max_tokens = max_tokens
        if temperature is not None:
            req.sampling.temperature = temperature
        rec = RequestRecord("grpc")
        calls: dict[int, dict[str, Any]] = {}
        rec.begin()
        try:
            async for r in self.stub.Generate(req, metadata=self._metadata, timeout=timeout_s):
                rec.request_id = r.request_id
                t_us = getattr(r, "server_time_us", 0)  # the timing contract's field
                kind = r.WhichOneof("kind")
                if kind == "delta":
                    rec.text_chunk(r.delta.text, t_us)
                elif kind == "tool_call_delta":
                    d = r.tool_call_delta
                    call = calls.setdefault(d.index, {"call_id": d.call_id, "name": d.name,
                                                      "arguments": ""})
                    call["name"] = d.name or call["name"]
                    if d.arguments_delta:
                        rec.chunk(t_us)
                        call["arguments"] += d.arguments_delta
                    if d.done and d.arguments_json:
                        call["arguments"] = d.arguments_json
                        rec.tool_done()
                elif kind == "complete":
                    rec.terminal()
                    c = r.complete
                    rec.end_server_us = t_us
                    rec.finish_reason = c.finish_reason
                    rec.usage = {"prompt_tokens": r.usage.prompt_tokens,
                                 "completion_tokens": r.usage.completion_tokens,
                                 "cached_tokens": r.usage.cached_tokens}
                    rec.turnspec = {"request_id": r.request_id, "model": c.model,
                                    "timing": _fields(c.timing),
                                    "spec": _fields(c.spec) if c.HasField("spec") else None}
                if (cancel_after_chunks is not None and len(rec.chunk_ms) >= cancel_after_chunks
                        and rec.cancel_ms is None):
                    rec.cancel_sent()
                    task = asyncio.create_task(self._cancel(request_id))
                    self._aborts.add(task)
                    task.add_done_callback(self._aborts.discard)
        except grpc.aio.AioRpcError as e:
            return rec.fail({"code": e.code().name, "message": e.details()})
        rec.tool_calls = [calls[i] for i in sorted(calls)]
        if rec.finish_reason is None:
            return rec.fail(dict(INCOMPLETE))
        return rec.end(True, rec.end_server_us)

    async def abort(self, request_id: str) -> bool:
        """True if the server knew the request; a refused call (bad key) raises AioRpcError."""
        resp = await self.stub.Abort(pb.AbortRequest(request_id=request_id),
                                     metadata=self._metadata)
        return resp.found

    async def _cancel(self, request_id: str) -> None:
        # a mid-stream cancel whose Abort fails shows in the record: the stream then ends
        # with its own finish reason instead of "abort"
        with contextlib.suppress(grpc.aio.AioRpcError):
            await self.abort(request_id)

    async def close(self) -> None:
        await self.channel.close()
