"""`ResponsesSocketClient`: one WebSocket on `/v1/responses` (Responses WebSocket mode)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp

from turnspec.loadtest.record import RequestRecord
from turnspec.loadtest.wire import auth_headers, ms_since, net_rtt_ms, pong_server_ms, server_t_us

_TERMINAL = ("response.completed", "response.incomplete", "response.failed")


class ResponsesSocketClient:
    def __init__(self, url: str, api_key: str | None = None,
                 headers: dict[str, str] | None = None):
        """`headers` go on the upgrade request (e.g. a W3C `traceparent` for the connection)."""
        self.url = url
        self._headers = {**auth_headers(api_key), **(headers or {})}
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
        """A `ping` event answered by `pong` (between responses), less the server's time on it
        when the pong says (`received_us`..`t_us`). A server without pings answers with an
        `error` event, which is one round trip all the same."""
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
                        return net_rtt_ms(ms_since(t0), pong_server_ms(e))
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
                    rec.text_chunk(e["delta"], server_t_us(e))
                elif kind == "response.output_item.added" and e["item"]["type"] == "function_call":
                    item = e["item"]
                    calls[item["id"]] = {"call_id": item["call_id"], "name": item["name"],
                                         "arguments": ""}
                elif kind == "response.function_call_arguments.delta":
                    rec.chunk(server_t_us(e))
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
        rec.terminal()
        r = e["response"]
        kind = e["type"]
        rec.usage, rec.turnspec = r.get("usage") or {}, r.get("turnspec") or {}
        rec.request_id = rec.turnspec.get("request_id")
        rec.finish_reason = {"response.completed": "completed"}.get(
            kind, (r.get("incomplete_details") or {}).get("reason", r["status"]))
        rec.tool_calls = list(calls.values())
        if kind == "response.failed":
            rec.end_server_us = server_t_us(e)
            return rec.fail(r.get("error") or {"message": "response failed"})
        return rec.end(True, server_t_us(e))

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self._session is not None:
            await self._session.close()
