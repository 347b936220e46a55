"""The load-test clients against a real server: one record per request with client timing,
text, tool calls and the server's `turnspec` block, on all three transports."""

from __future__ import annotations

import json

import pytest

from turnspec.loadtest.clients import (
    ChatCompletionsClient,
    GenerationClient,
    ResponsesSocketClient,
)

TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}
ASK = [{"role": "user", "content": "What's the weather in Paris?"}]


@pytest.fixture
async def clients(real_server):
    port, gport = real_server.port, real_server.grpc_port
    http = ChatCompletionsClient(f"http://127.0.0.1:{port}/v1")
    ws = await ResponsesSocketClient(f"ws://127.0.0.1:{port}/v1/responses").connect()
    grpc_c = GenerationClient(f"127.0.0.1:{gport}")
    yield {"http": http, "ws": ws, "grpc": grpc_c}
    for c in (http, ws, grpc_c):
        await c.close()


async def _run(clients, transport: str, **kw):
    c = clients[transport]
    if transport == "http":
        return await c.complete(ASK, max_tokens=kw.get("max_tokens"), tools=kw.get("tools"),
                                tool_choice=kw.get("tool_choice"))
    if transport == "ws":
        tools = [{"type": "function", **t["function"]} for t in kw.get("tools") or []] or None
        return await c.create(ASK, max_output_tokens=kw.get("max_tokens"), tools=tools,
                              tool_choice=kw.get("tool_choice"))
    return await c.generate(ASK, max_tokens=kw.get("max_tokens"), tools=kw.get("tools"),
                            tool_choice=kw.get("tool_choice"))


@pytest.mark.parametrize("transport", ["http", "ws", "grpc"])
async def test_text_record(clients, transport):
    rec = await _run(clients, transport, max_tokens=8)
    assert rec.ok, rec.error
    assert rec.transport == transport and rec.text
    assert rec.ttft_ms == rec.chunk_ms[0] and rec.e2e_ms >= rec.chunk_ms[-1]
    assert rec.e2e_ms == rec.terminal_ms  # the terminal event, not the stream's close
    assert len(rec.itl_ms) == len(rec.chunk_ms) - 1 and all(x >= 0 for x in rec.itl_ms)
    t = rec.timing
    assert t["completion_tokens"] == 8 and t["prompt_tokens"] > 0
    assert t["server_received_unix_ms"] >= rec.start_unix_ms - 1000  # same host clock
    assert rec.request_id and rec.as_dict()["turnspec"]["timing"] == t


@pytest.mark.parametrize("transport", ["http", "ws", "grpc"])
async def test_tool_call_record(clients, transport):
    choice = "get_weather" if transport == "grpc" else "required"
    rec = await _run(clients, transport, max_tokens=40, tools=[TOOL], tool_choice=choice)
    assert rec.ok, rec.error
    assert [c["name"] for c in rec.tool_calls] == ["get_weather"]
    assert isinstance(json.loads(rec.tool_calls[0]["arguments"])["city"], str)
    assert rec.tool_calls[0]["call_id"]


@pytest.mark.parametrize("transport", ["http", "ws", "grpc"])
async def test_error_record(clients, transport):
    rec = await _run(clients, transport, max_tokens=5000)  # over the 1024-token context
    assert not rec.ok and rec.error and rec.e2e_ms is not None
    assert rec.error.get("code") in ("context_length_exceeded", "INVALID_ARGUMENT")
