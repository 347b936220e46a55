"""Clients for turnspec's three public wire contracts; each request yields a `RequestRecord`.

- `ChatCompletionsClient`: HTTP `POST /v1/chat/completions` with `stream: true` (SSE).
- `ResponsesSocketClient`: one WebSocket on `/v1/responses` (Responses WebSocket mode), one
  response at a time, `previous_response_id` and `response.cancel` supported.
- `GenerationClient`: gRPC `turnspec.v1.Generation/Generate` (stubs generated from the
  committed .proto, the public contract; no server code is imported).

Each has `probe_rtt()` (a round trip on the same connection or pool: HTTP keep-alive
`GET /health`, a WS `ping` event, gRPC `grpc.health.v1.Health/Check` on the same channel) and
barge-in (`cancel_after_chunks`: WS `response.cancel`, gRPC `Abort`, HTTP closes the stream).
Errors never raise: they come back as a record with `ok=False` and `error` set.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from turnspec.loadtest.record import RequestRecord
from turnspec.server.proto.turnspec.v1 import generation_pb2 as pb
from turnspec.server.proto.turnspec.v1 import generation_pb2_grpc as pb_grpc

_TERMINAL = ("response.completed", "response.incomplete", "response.failed")
_INCOMPLETE = {"code": "incomplete_stream", "message": "the stream ended without its final event"}


def _auth(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def _t_us(event: dict[str, Any]) -> int:
    """The server's send time of an event or chunk (`turnspec.t_us`), 0 when absent."""
    block = event.get("turnspec")
    return int(block.get("t_us") or 0) if isinstance(block, dict) else 0


def _ms_since(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0


class ChatCompletionsClient:
    def __init__(self, base_url: str, api_key: str | None = None, max_connections: int = 256,
                 model: str = "turnspec"):
        self.base_url = base_url.rstrip("/")
        parts = urlsplit(self.base_url)
        self.root = f"{parts.scheme}://{parts.netloc}"
        self.model = model
        self._headers = _auth(api_key)
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=max_connections),
            timeout=aiohttp.ClientTimeout(total=None))

    async def probe_rtt(self, path: str = "/health") -> float | None:
        """A keep-alive GET on the same pool; any HTTP answer is one round trip."""
        t0 = time.perf_counter()
        try:
            async with self._session.get(self.root + path, headers=self._headers) as resp:
                await resp.read()
        except (aiohttp.ClientError, OSError):
            return None
        return _ms_since(t0)

    async def served_model(self) -> str | None:
        """The first model id of `GET /v1/models` (vLLM and SGLang check `model`)."""
        try:
            async with self._session.get(self.base_url + "/models",
                                         headers=self._headers) as resp:
                data = await resp.json(content_type=None)
            return str(data["data"][0]["id"])
        except (aiohttp.ClientError, OSError, ValueError, KeyError, IndexError, TypeError):
            return None

    async def complete(self, messages: list[dict[str, Any]], *, tools: list[dict] | None = None,
                       tool_choice: Any = None, max_tokens: int | None = None,
                       temperature: float | None = None, cancel_after_chunks: int | None = None,
                       **extra: Any) -> RequestRecord:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "stream": True,
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
                    return rec.fail({"status": resp.status, **await _error_body(resp)})
                async for raw in resp.content:
                    line = raw.strip()
                    if not line.startswith(b"data: ") or line == b"data: [DONE]":
                        continue
                    chunk = json.loads(line[6:])
                    if "error" in chunk:
                        return rec.fail(chunk["error"])
                    self._on_chunk(rec, chunk, calls)
                    if cancel_after_chunks is not None and len(rec.chunk_ms) >= cancel_after_chunks:
                        rec.cancel_sent()  # barge-in: an HTTP client can only hang up
                        resp.close()
                        rec.finish_reason = "cancelled"
                        break
        except (aiohttp.ClientError, OSError) as e:
            return rec.fail({"code": "connection_error", "message": str(e) or type(e).__name__})
        except ValueError as e:
            return rec.fail({"code": "bad_stream", "message": f"unparsable SSE chunk: {e}"})
        rec.tool_calls = [calls[i] for i in sorted(calls)]
        if rec.finish_reason is None:
            return rec.fail(dict(_INCOMPLETE))
        return rec.end(True)

    @staticmethod
    def _on_chunk(rec: RequestRecord, chunk: dict[str, Any], calls: dict[int, dict]) -> None:
        t_us = _t_us(chunk)
        rec.end_server_us = t_us or rec.end_server_us
        if chunk.get("usage"):
            rec.usage = chunk["usage"]
        block = chunk.get("turnspec")
        if isinstance(block, dict) and "timing" in block:  # the completion block
            rec.turnspec = block
            rec.request_id = block.get("request_id")
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            if delta.get("content"):
                rec.text_chunk(delta["content"], t_us)
            for tc in delta.get("tool_calls") or ():
                call = calls.setdefault(tc["index"], {"call_id": "", "name": "", "arguments": ""})
                call["call_id"] = tc.get("id") or call["call_id"]
                fn = tc.get("function") or {}
                call["name"] = fn.get("name") or call["name"]
                if fn.get("arguments"):
                    rec.chunk(t_us)
                    call["arguments"] += fn["arguments"]
                    if rec.tool_call_ms is None and "}" in fn["arguments"] \
                            and _is_object(call["arguments"]):
                        rec.tool_done()  # arguments complete: they parse as a JSON object
            if choice.get("finish_reason"):
                rec.finish_reason = choice["finish_reason"]
                if calls and _is_object(calls[min(calls)]["arguments"]):
                    rec.tool_done()  # arguments that came whole in one chunk

    async def close(self) -> None:
        await self._session.close()


def _is_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


async def _error_body(resp: aiohttp.ClientResponse) -> dict[str, Any]:
    text = await resp.text()
    try:
        err = json.loads(text).get("error")
    except (ValueError, AttributeError):
        err = None
    return err if isinstance(err, dict) else {"message": text[:300] or resp.reason or ""}


class ResponsesSocketClient:
    def __init__(self, url: str, api_key: str | None = None):
        self.url = url
        self._headers = _auth(api_key)
        self._session: aiohttp.ClientSession | None = None
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self._pings = 0

    async def connect(self) -> ResponsesSocketClient:
        self._session = aiohttp.ClientSession()
        try:
            self.ws = await self._session.ws_connect(self.url, headers=self._headers,
                                                     max_msg_size=0, autoping=True)
        except BaseException:
            await self._session.close()
            raise
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

    async def probe_rtt(self, timeout_s: float = 10.0) -> float | None:
        """A `ping` event answered by `pong` (between responses). A server without pings
        answers with an `error` event, which is one round trip all the same."""
        self._pings += 1
        event_id = f"ping_{self._pings}"
        t0 = time.perf_counter()
        try:
            async with asyncio.timeout(timeout_s):
                await self.send({"type": "ping", "event_id": event_id})
                while True:
                    e = await self.recv()
                    if e.get("type") == "error" or (e.get("type") == "pong"
                                                    and e.get("event_id") == event_id):
                        return _ms_since(t0)
        except (aiohttp.ClientError, ConnectionError, OSError, TimeoutError, ValueError):
            return None

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
                    rec.text_chunk(e["delta"], _t_us(e))
                elif kind == "response.output_item.added" and e["item"]["type"] == "function_call":
                    item = e["item"]
                    calls[item["id"]] = {"call_id": item["call_id"], "name": item["name"],
                                         "arguments": ""}
                elif kind == "response.function_call_arguments.delta":
                    rec.chunk(_t_us(e))
                    calls[e["item_id"]]["arguments"] += e["delta"]
                elif kind == "response.function_call_arguments.done":
                    calls[e["item_id"]]["arguments"] = e["arguments"]
                    rec.tool_done()
                elif kind in _TERMINAL:
                    return self._finish(rec, e, calls)
                if (cancel_after_chunks is not None and len(rec.chunk_ms) >= cancel_after_chunks
                        and rec.response_id):
                    rec.cancel_sent()
                    await self.send({"type": "response.cancel", "response_id": rec.response_id})
                    cancel_after_chunks = None
        except (aiohttp.ClientError, ConnectionError, OSError) as e:
            return rec.fail({"code": "connection_error", "message": str(e) or type(e).__name__})
        except (ValueError, KeyError) as e:
            return rec.fail({"code": "bad_stream", "message": f"unexpected event: {e!r}"})

    @staticmethod
    def _finish(rec: RequestRecord, e: dict[str, Any], calls: dict[str, dict]) -> RequestRecord:
        r = e["response"]
        kind = e["type"]
        rec.usage, rec.turnspec = r.get("usage") or {}, r.get("turnspec") or {}
        rec.request_id = rec.turnspec.get("request_id")
        rec.finish_reason = {"response.completed": "completed"}.get(
            kind, (r.get("incomplete_details") or {}).get("reason", r["status"]))
        rec.tool_calls = list(calls.values())
        if kind == "response.failed":
            rec.end_server_us = _t_us(e)
            return rec.fail(r.get("error") or {"message": "response failed"})
        return rec.end(True, _t_us(e))

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
        return _ms_since(t0)

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
                    task = asyncio.create_task(self.abort(request_id))
                    self._aborts.add(task)
                    task.add_done_callback(self._aborts.discard)
        except grpc.aio.AioRpcError as e:
            return rec.fail({"code": e.code().name, "message": e.details()})
        rec.tool_calls = [calls[i] for i in sorted(calls)]
        if rec.finish_reason is None:
            return rec.fail(dict(_INCOMPLETE))
        return rec.end(True, rec.end_server_us)

    async def abort(self, request_id: str) -> bool:
        try:
            resp = await self.stub.Abort(pb.AbortRequest(request_id=request_id),
                                         metadata=self._metadata)
        except grpc.aio.AioRpcError:
            return False
        return resp.found

    async def close(self) -> None:
        await self.channel.close()
