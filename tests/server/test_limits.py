"""Per-request limits (tools, input tokens, output tokens), the WebSocket connection limit and
the idle timeout, on every transport: each refusal is OpenAI-shaped with a `code` (HTTP 400 /
503, gRPC INVALID_ARGUMENT / the WS `error` event), and the server serves on afterwards."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from turnspec.loadtest.clients import (
    ChatCompletionsClient,
    GenerationClient,
    ResponsesSocketClient,
)
from turnspec.server.config import ServerConfig

from .srv_helpers import WEATHER_TOOL, WEATHER_TOOL_FLAT, assert_serves_normally, start_server

HI = [{"role": "user", "content": "hi"}]
LONG = [{"role": "user", "content": "Please tell me about the weather " * 12}]


@pytest.fixture(scope="module")
def server(local_engine):
    srv = start_server(local_engine, max_tools=2, max_input_tokens=64, max_output_tokens=32,
                       default_max_tokens=8, max_ws_connections=3, ws_idle_timeout_s=1.0)
    yield srv
    srv.stop()


async def test_limits_refused_with_codes_on_every_transport(server):
    http = ChatCompletionsClient(f"http://127.0.0.1:{server.port}/v1")
    grpc_c = GenerationClient(f"127.0.0.1:{server.grpc_port}")
    ws = await ResponsesSocketClient(f"ws://127.0.0.1:{server.port}/v1/responses").connect()
    tools3 = [WEATHER_TOOL] * 3
    try:
        for kwargs, code in (({"tools": tools3}, "too_many_tools"),
                             ({"max_tokens": 33}, "max_tokens_too_large")):
            rec = await http.complete(HI, **kwargs)
            assert rec.error["status"] == 400 and rec.error["code"] == code, rec.error
            rec = await grpc_c.generate(HI, **kwargs)
            assert rec.error["code"] == "INVALID_ARGUMENT" and code in rec.error["message"]
        rec = await http.complete(LONG)
        assert rec.error["status"] == 400 and rec.error["code"] == "input_too_long"
        assert "at most 64 input tokens" in rec.error["message"]
        rec = await grpc_c.generate(LONG)
        assert rec.error["code"] == "INVALID_ARGUMENT" and "input_too_long" in rec.error["message"]
        for kwargs, code in (({"tools": [WEATHER_TOOL_FLAT] * 3}, "too_many_tools"),
                             ({"max_output_tokens": 33}, "max_tokens_too_large")):
            rec = await ws.create("hi", **kwargs)
            assert rec.error["status"] == 400 and rec.error["code"] == code, rec.error
        rec = await ws.create(LONG[0]["content"])
        assert rec.error["code"] == "input_too_long"
        assert (await ws.create("hi", max_output_tokens=32)).ok  # at the limit: served
    finally:
        for c in (http, grpc_c, ws):
            await c.close()
    await assert_serves_normally(server.port)


async def test_ws_connection_limit_and_idle_timeout(server):
    url = f"ws://127.0.0.1:{server.port}/v1/responses"
    socks = [await ResponsesSocketClient(url).connect() for _ in range(3)]
    try:
        with pytest.raises(aiohttp.WSServerHandshakeError) as info:
            await ResponsesSocketClient(url).connect()
        assert info.value.status == 503
        async with aiohttp.ClientSession() as s, s.get(url) as r:  # the body says why
            assert r.status == 503
            assert (await r.json())["error"]["code"] == "too_many_connections"
        # idle for ws_idle_timeout_s (1 s): the server closes with 1000 "idle timeout"
        msg = await asyncio.wait_for(socks[0].ws.receive(), 30)
        assert msg.type == aiohttp.WSMsgType.CLOSE and msg.data == 1000
        assert msg.extra == "idle timeout"
    finally:
        for s in socks:
            await s.close()
    for _ in range(200):
        if server.hub.ws_connections == 0:
            break
        await asyncio.sleep(0.05)
    assert server.hub.ws_connections == 0
    await assert_serves_normally(server.port)


async def test_a_turn_is_not_idleness(server):
    ws = await ResponsesSocketClient(f"ws://127.0.0.1:{server.port}/v1/responses").connect()
    try:  # longer than the idle timeout, streaming all the while
        rec = await ws.create("Count from one to thirty in words.", max_output_tokens=32)
        assert rec.ok
    finally:
        await ws.close()


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("max_tools", 0, "max_tools: expected >= 1"),
    ("max_input_tokens", 0, "max_input_tokens: expected >= 1 or None"),
    ("max_output_tokens", 4, "default_max_tokens=256: expected at most max_output_tokens=4"),
    ("ws_idle_timeout_s", 0, "ws_idle_timeout_s: expected > 0"),
    ("send_timeout_s", -1, "send_timeout_s: expected > 0"),
    ("tls_cert", "/nonexistent.pem", "tls_cert and tls_key: expected both"),
])
def test_config_rejects_bad_limits(field, value, expected):
    with pytest.raises(ValueError, match=expected.replace("(", r"\(")):
        ServerConfig(**{field: value})
