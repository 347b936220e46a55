"""Clients for turnspec's three public wire contracts; each request yields a `RequestRecord`.

- `ChatCompletionsClient`: HTTP `POST /v1/chat/completions` with `stream: true` (SSE).
- `ResponsesSocketClient`: one WebSocket on `/v1/responses` (Responses WebSocket mode), one
  response at a time, `previous_response_id` and `response.cancel` supported.
- `GenerationClient`: gRPC `turnspec.v1.Generation/Generate` (stubs generated from the
  committed .proto, the public contract; no server code is imported).

Errors never raise: they come back as a record with `ok=False` and `error` set.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import grpc

from turnspec.loadtest.record import RequestRecord
from turnspec.server.proto.turnspec.v1 import generation_pb2 as pb
from turnspec.server.proto.turnspec.v1 import generation_pb2_grpc as pb_grpc

_TERMINAL = ("response.completed", "response.incomplete", "response.failed")


def _auth(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


class ChatCompletionsClient:
    def __init__(self, base_url: str, api_key: str | None = None, max_connections: int = 256):
        self.base_url = base_url.rstrip("/")
        self._headers = _auth(api_key)
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=max_connections),
            timeout=aiohttp.ClientTimeout(total=None))

    async def complete(self, messages: list[dict[str, Any]], *, tools: list[dict] | None = None,
                       tool_choice: Any = None, max_tokens: int | None = None,
                       temperature: float | None = None, **extra: Any) -> RequestRecord:
        body: dict[str, Any] = {"model": "turnspec", "messages": messages, "stream": True,
                                "stream_options": {"include_usage": True}, **extra}
        for k, v in (("tools", tools), ("tool_choice", tool_choice),
                     ("max_tokens", max_tokens), ("temperature", temperature)):
            if v is not None:
                body[k] = v
        rec = RequestRecord("http")
        calls: dict[int, dict[str, Any]] = {}
        rec.begin()
        try:
            async with self._session.post(f"{self.base_url}/chat/completions", json=body,
                                          headers=self._headers) as resp:
                if resp.status != 200:
                    err = (await resp.json(content_type=None)).get("error", {})
                    return rec.fail({"status": resp.status, **err})
                async for raw in resp.content:
                    line = raw.strip()
                    if not line.startswith(b"data: ") or line == b"data: [DONE]":
                        continue
                    chunk = json.loads(line[6:])
                    if "error" in chunk:
                        return rec.fail(chunk["error"])
                    self._on_chunk(rec, chunk, calls)
        except (aiohttp.ClientError, OSError) as e:
            return rec.fail({"code": "connection_error", "message": str(e)})
        rec.tool_calls = [calls[i] for i in sorted(calls)]
        return rec.end(rec.finish_reason is not None)

    @staticmethod
    def _on_chunk(rec: RequestRecord, chunk: dict[str, Any], calls: dict[int, dict]) -> None:
        if chunk.get("usage"):
            rec.usage = chunk["usage"]
        if "timing" in (chunk.get("turnspec") or {}):  # the completion block (others: t_us)
            rec.turnspec = chunk["turnspec"]
            rec.request_id = chunk["turnspec"].get("request_id")
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            if delta.get("content"):
                rec.chunk()
                rec.text += delta["content"]
            for tc in delta.get("tool_calls") or ():
                call = calls.setdefault(tc["index"], {"call_id": "", "name": "", "arguments": ""})
                call["call_id"] = tc.get("id") or call["call_id"]
                fn = tc.get("function") or {}
                call["name"] = fn.get("name") or call["name"]
                if fn.get("arguments"):
                    rec.chunk()
                    call["arguments"] += fn["arguments"]
            if choice.get("finish_reason"):
                rec.finish_reason = choice["finish_reason"]

    async def close(self) -> None:
        await self._session.close()


class ResponsesSocketClient:
    def __init__(self, url: str, api_key: str | None = None,
                 headers: dict[str, str] | None = None):
        """`headers` go on the upgrade request (e.g. a W3C `traceparent` for the connection)."""
        self.url = url
        self._headers = {**_auth(api_key), **(headers or {})}
        self._session: aiohttp.ClientSession | None = None
        self.ws: aiohttp.ClientWebSocketResponse | None = None

    async def connect(self) -> ResponsesSocketClient:
        self._session = aiohttp.ClientSession()
        self.ws = await self._session.ws_connect(self.url, headers=self._headers,
                                                 max_msg_size=0, autoping=True)
        return self

    async def send(self, event: dict[str, Any] | str) -> None:
        assert self.ws is not None, "connect() first"
        await self.ws.send_str(event if isinstance(event, str) else json.dumps(event))

    async def recv(self) -> dict[str, Any]:
        assert self.ws is not None, "connect() first"
        msg = await self.ws.receive()
        if msg.type != aiohttp.WSMsgType.TEXT:
            raise ConnectionError(f"websocket closed or failed: {msg.type.name} {msg.data!r}")
        return json.loads(msg.data)

    async def create(self, input: str | list[dict[str, Any]], *, instructions: str | None = None,
                     tools: list[dict] | None = None, tool_choice: Any = None,
                     previous_response_id: str | None = None,
                     max_output_tokens: int | None = None, temperature: float | None = None,
                     cancel_after_chunks: int | None = None, **extra: Any) -> RequestRecord:
        """Send `response.create`, read until the terminal event; optionally send
        `response.cancel` after `cancel_after_chunks` content chunks (barge-in)."""
        ev: dict[str, Any] = {"type": "response.create", "model": "turnspec", "input": input,
                              **extra}
        for k, v in (("instructions", instructions), ("tools", tools),
                     ("tool_choice", tool_choice), ("previous_response_id", previous_response_id),
                     ("max_output_tokens", max_output_tokens), ("temperature", temperature)):
            if v is not None:
                ev[k] = v
        rec = RequestRecord("ws")
        calls: dict[str, dict[str, Any]] = {}
        rec.begin()
        try:
            await self.send(ev)
            while True:
                e = await self.recv()
                kind = e.get("type")
                if kind == "error":
                    return rec.fail({"status": e.get("status"), **(e.get("error") or {})})
                if kind == "response.created":
                    rec.response_id = e["response"]["id"]
                elif kind == "response.output_text.delta":
                    rec.chunk()
                    rec.text += e["delta"]
                elif kind == "response.output_item.added" and e["item"]["type"] == "function_call":
                    item = e["item"]
                    calls[item["id"]] = {"call_id": item["call_id"], "name": item["name"],
                                         "arguments": ""}
                elif kind == "response.function_call_arguments.delta":
                    rec.chunk()
                    calls[e["item_id"]]["arguments"] += e["delta"]
                elif kind == "response.function_call_arguments.done":
                    calls[e["item_id"]]["arguments"] = e["arguments"]
                elif kind in _TERMINAL:
                    r = e["response"]
                    rec.usage, rec.turnspec = r.get("usage") or {}, r.get("turnspec") or {}
                    rec.request_id = rec.turnspec.get("request_id")
                    rec.finish_reason = {"response.completed": "completed"}.get(
                        kind, (r.get("incomplete_details") or {}).get("reason", r["status"]))
                    rec.tool_calls = list(calls.values())
                    if kind == "response.failed":
                        return rec.fail(r.get("error") or {"message": "response failed"})
                    return rec.end(True)
                if (cancel_after_chunks is not None and len(rec.chunk_ms) >= cancel_after_chunks
                        and rec.response_id):
                    await self.send({"type": "response.cancel", "response_id": rec.response_id})
                    cancel_after_chunks = None
        except (aiohttp.ClientError, ConnectionError, OSError) as e:
            return rec.fail({"code": "connection_error", "message": str(e)})

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self._session is not None:
            await self._session.close()


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


class GenerationClient:
    def __init__(self, target: str, api_key: str | None = None):
        self.channel = grpc.aio.insecure_channel(target)
        self.stub = pb_grpc.GenerationStub(self.channel)
        self._metadata = (("authorization", f"Bearer {api_key}"),) if api_key else ()

    async def generate(self, messages: list[dict[str, Any]], *, tools: list[dict] | None = None,
                       tool_choice: str | None = None, max_tokens: int | None = None,
                       temperature: float | None = None, request_id: str = "",
                       timeout_s: float | None = None) -> RequestRecord:
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
                kind = r.WhichOneof("kind")
                if kind == "delta":
                    rec.chunk()
                    rec.text += r.delta.text
                elif kind == "tool_call_delta":
                    d = r.tool_call_delta
                    call = calls.setdefault(d.index, {"call_id": d.call_id, "name": d.name,
                                                      "arguments": ""})
                    call["name"] = d.name or call["name"]
                    if d.arguments_delta:
                        rec.chunk()
                        call["arguments"] += d.arguments_delta
                    if d.done and d.arguments_json:
                        call["arguments"] = d.arguments_json
                elif kind == "complete":
                    c = r.complete
                    rec.finish_reason = c.finish_reason
                    rec.usage = {"prompt_tokens": r.usage.prompt_tokens,
                                 "completion_tokens": r.usage.completion_tokens,
                                 "cached_tokens": r.usage.cached_tokens}
                    rec.turnspec = {"request_id": r.request_id, "model": c.model,
                                    "timing": {f.name: getattr(c.timing, f.name)
                                               for f in c.timing.DESCRIPTOR.fields}}
        except grpc.aio.AioRpcError as e:
            return rec.fail({"code": e.code().name, "message": e.details()})
        rec.tool_calls = [calls[i] for i in sorted(calls)]
        return rec.end(rec.finish_reason is not None)

    async def abort(self, request_id: str) -> bool:
        resp = await self.stub.Abort(pb.AbortRequest(request_id=request_id),
                                     metadata=self._metadata)
        return resp.found

    async def close(self) -> None:
        await self.channel.close()
