"""HTTP /v1/chat/completions, /v1/models, /health, /metrics with the real openai SDK and
the real SmolLM2 engine over a real socket."""

from __future__ import annotations

import json

import aiohttp
import openai
import pytest

from .srv_helpers import WEATHER_TOOL, scrape, start_server, wait_engine_idle

MAX_BODY = 64 * 1024


@pytest.fixture(scope="module")
def server(local_engine):
    srv = start_server(local_engine, max_message_bytes=MAX_BODY)
    yield srv
    srv.stop()


@pytest.fixture
async def client(server):
    c = openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key="unused")
    yield c
    await c.close()


async def _tiny_ok(client: openai.AsyncOpenAI) -> None:
    r = await client.chat.completions.create(model="any", max_tokens=1,
                                             messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].finish_reason in ("length", "stop")


async def test_sdk_streams_tool_calls(client):
    stream = await client.chat.completions.create(
        model="smollm2", stream=True, max_tokens=40, tools=[WEATHER_TOOL],
        tool_choice="required", stream_options={"include_usage": True},
        messages=[{"role": "user", "content": "What's the weather in Paris?"}])
    calls: dict[int, dict] = {}
    finish, usage, turnspec = None, None, None
    async for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        if chunk.model_extra and "turnspec" in chunk.model_extra:
            turnspec = chunk.model_extra["turnspec"]
        for choice in chunk.choices:
            for tc in choice.delta.tool_calls or []:
                c = calls.setdefault(tc.index, {"id": None, "name": None, "args": ""})
                c["id"] = tc.id or c["id"]
                if tc.function and tc.function.name:
                    c["name"] = tc.function.name
                if tc.function and tc.function.arguments:
                    c["args"] += tc.function.arguments
            finish = choice.finish_reason or finish
    assert finish == "tool_calls"
    assert list(calls) == [0]
    assert calls[0]["name"] == "get_weather" and calls[0]["id"].startswith("call_")
    assert isinstance(json.loads(calls[0]["args"])["city"], str)
    assert usage.completion_tokens > 0 and usage.prompt_tokens > 0
    assert turnspec["timing"]["completion_tokens"] == usage.completion_tokens


async def test_sdk_streams_text_and_non_stream_matches(client):
    msgs = [{"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Say hello."}]
    stream = await client.chat.completions.create(model="x", messages=msgs, max_tokens=6,
                                                  stream=True, temperature=0)
    pieces = [c.choices[0].delta.content async for c in stream
              if c.choices and c.choices[0].delta.content]
    full = await client.chat.completions.create(model="x", messages=msgs, max_tokens=6)
    assert "".join(pieces) == full.choices[0].message.content  # greedy: same text
    assert full.usage.completion_tokens == 6 and full.choices[0].finish_reason == "length"
    assert full.model_extra["turnspec"]["timing"]["prompt_tokens"] == full.usage.prompt_tokens


async def test_named_tool_choice_non_stream(client):
    r = await client.chat.completions.create(
        model="x", max_tokens=40, tools=[WEATHER_TOOL],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        messages=[{"role": "user", "content": "Weather in Rome?"}])
    msg = r.choices[0].message
    assert r.choices[0].finish_reason == "tool_calls"
    assert msg.tool_calls[0].function.name == "get_weather"
    json.loads(msg.tool_calls[0].function.arguments)


async def test_models_health_metrics(client, server):
    models = await client.models.list()
    assert [m.id for m in models.data] == [server.hub.engine.model_name]
    async with aiohttp.ClientSession() as s:
        async with s.get(f"http://127.0.0.1:{server.port}/health") as r:
            assert r.status == 200 and (await r.json())["status"] == "ok"
        async with s.get(f"http://127.0.0.1:{server.port}/nope") as r:
            assert r.status == 404 and (await r.json())["error"]["code"] == "not_found"
    m = scrape(server.port)
    assert m['turnspec_requests_total{outcome="tool_calls",transport="http"}'] >= 1


BAD_BODIES = [
    (b"{not json", 400, None, None),
    (b'"a string"', 400, None, None),
    (json.dumps({"messages": "hello"}).encode(), 400, None, "messages"),
    (json.dumps({"messages": [{"role": "user", "content": "hi"}], "temperature": "hot"}).encode(),
     400, None, "temperature"),
    (json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 0}).encode(),
     400, None, "max_tokens"),
    (json.dumps({"messages": [{"role": "user", "content": "hi"}], "n": 2}).encode(), 400, None,
     "n"),
    (json.dumps({"messages": [{"role": "user", "content": "hi"}], "tools": [WEATHER_TOOL],
                 "tool_choice": {"type": "function", "function": {"name": "nope"}}}).encode(),
     400, None, "tool_choice.function.name"),
    (json.dumps({"messages": [{"role": "user", "content": "hi"}], "tools": [WEATHER_TOOL],
                 "tool_choice": "always"}).encode(), 400, None, "tool_choice"),
    (json.dumps({"messages": [{"role": "user", "content": "hi"}],
                 "tools": [{"type": "function", "function": {"name": "bad name!"}}]}).encode(),
     400, None, "tools[0].function.name"),
    (json.dumps({"messages": [{"role": "user", "content": "word " * 1500}]}).encode(), 400,
     "context_length_exceeded", "messages"),
    (json.dumps({"messages": [{"role": "user", "content": "hi"}],
                 "max_tokens": 5000}).encode(), 400, "context_length_exceeded", "max_tokens"),
    (json.dumps({"messages": [{"role": "user", "content": "x" * MAX_BODY}]}).encode(), 413,
     "request_too_large", None),
]


@pytest.mark.parametrize("body,status,code,param", BAD_BODIES,
                         ids=["malformed", "not-object", "messages-type", "temperature-type",
                              "max-tokens-range", "n", "unknown-tool", "bad-tool-choice",
                              "bad-tool-name", "over-context", "max-tokens-over-context",
                              "oversized"])
async def test_bad_input_structured_error(server, client, body, status, code, param):
    async with aiohttp.ClientSession() as s, s.post(
            f"http://127.0.0.1:{server.port}/v1/chat/completions", data=body,
            headers={"Content-Type": "application/json"}) as r:
        assert r.status == status
        err = (await r.json())["error"]
    assert err["message"] and err["type"] == "invalid_request_error"
    if code is not None:
        assert err["code"] == code
    if param is not None:
        assert err["param"] == param
    await _tiny_ok(client)


async def test_sdk_raises_typed_error(client):
    with pytest.raises(openai.BadRequestError) as info:
        await client.chat.completions.create(model="x", messages=[{"role": "user",
                                                                   "content": "hi"}],
                                             temperature=7)
    assert info.value.body["param"] == "temperature"


async def test_client_disconnect_aborts_the_engine_request(server):
    body = {"model": "x", "stream": True, "max_tokens": 400,
            "messages": [{"role": "user", "content": "Write a long story about a dragon."}]}
    async with aiohttp.ClientSession() as s:
        r = await s.post(f"http://127.0.0.1:{server.port}/v1/chat/completions", json=body)
        chunks = 0
        async for line in r.content:
            if line.startswith(b"data: ") and b'"content"' in line:
                chunks += 1
                if chunks == 3:
                    break
        r.close()  # drop the connection mid-stream
    m = wait_engine_idle(server.port)
    assert m["turnspec_engine_active_sequences"] == 0
    assert m['turnspec_requests_total{outcome="cancelled",transport="http"}'] >= 1
