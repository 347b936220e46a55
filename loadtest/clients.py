"""Clients for turnspec's three public wire contracts; each request yields a `RequestRecord`.

- `ChatCompletionsClient` (here): HTTP `POST /v1/chat/completions` with `stream: true` (SSE).
- `ResponsesSocketClient` (`ws_client.py`): one WebSocket on `/v1/responses` (Responses
  WebSocket mode), one response at a time, `previous_response_id` and `response.cancel`.
- `GenerationClient` (`grpc_client.py`): gRPC `turnspec.v1.Generation/Generate` (stubs
  generated from the committed .proto, the public contract; no server code is imported).

Each has `probe_rtt()` (a round trip on the same connection or pool: HTTP keep-alive
`GET /v1/models`, a WS `ping` event, gRPC `grpc.health.v1.Health/Check` on the same channel;
less the server's own time on the probe where it reports it: HTTP `Server-Timing`, the WS
`pong`'s `received_us`..`t_us`) and
barge-in (`cancel_after_chunks`: WS `response.cancel`, gRPC `Abort`, HTTP closes the stream).
Errors never raise: they come back as a record with `ok=False` and `error` set.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from turnspec.loadtest.grpc_client import GenerationClient
from turnspec.loadtest.record import RequestRecord
from turnspec.loadtest.wire import (
    INCOMPLETE,
    auth_headers,
    ms_since,
    net_rtt_ms,
    server_t_us,
    server_timing_ms,
)
from turnspec.loadtest.ws_client import ResponsesSocketClient

__all__ = ["ChatCompletionsClient", "GenerationClient", "ResponsesSocketClient"]


class ChatCompletionsClient:
    def __init__(self, base_url: str, api_key: str | None = None, max_connections: int = 256,
                 model: str = "turnspec"):
        self.base_url = base_url.rstrip("/")
        parts = urlsplit(self.base_url)
        self.root = f"{parts.scheme}://{parts.netloc}"
        self.model = model
        self._headers = auth_headers(api_key)
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=max_connections),
            timeout=aiohttp.ClientTimeout(total=None))

    async def probe_rtt(self) -> float | None:
        """A keep-alive `GET /v1/models` on the same pool; any HTTP answer is one round trip,
        less the server's time on it where it says (turnspec's `Server-Timing`). Not
        `/health`: SGLang's runs a generation (~1 s on the H200), which is no round trip."""
        t0 = time.perf_counter()
        try:
            async with self._session.get(self.base_url + "/models",
                                         headers=self._headers) as resp:
                await resp.read()
                probe = ms_since(t0)
                held = server_timing_ms(resp.headers.get("Server-Timing"))
        except (aiohttp.ClientError, OSError):
            return None
        return net_rtt_ms(probe, held)

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
                    if line == b"data: [DONE]":
                        rec.terminal()  # E2E ends here; the body's end is read for the pool
                        continue
                    if not line.startswith(b"data: "):
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
            return rec.fail(dict(INCOMPLETE))
        return rec.end(True)

    @staticmethod
    def _on_chunk(rec: RequestRecord, chunk: dict[str, Any], calls: dict[int, dict]) -> None:
        t_us = server_t_us(chunk)
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
