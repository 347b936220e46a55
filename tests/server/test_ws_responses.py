"""WebSocket /v1/responses over a real socket with the real SmolLM2 engine."""

from __future__ import annotations

import json

import pytest

from turnspec.loadtest.clients import ResponsesSocketClient

from .srv_helpers import BLOCK, WEATHER_TOOL_FLAT, scrape, start_server, wait_engine_idle

MAX_MSG = 64 * 1024


@pytest.fixture(scope="module")
def server(local_engine):
    srv = start_server(local_engine, max_message_bytes=MAX_MSG)
    yield srv
    srv.stop()


@pytest.fixture
async def ws(server):
    client = await ResponsesSocketClient(f"ws://127.0.0.1:{server.port}/v1/responses").connect()
    yield client
    await client.close()


async def _events_until_terminal(ws: ResponsesSocketClient) -> list[dict]:
    events = []
    while True:
        e = await ws.recv()
        events.append(e)
        if e["type"] in ("response.completed", "response.incomplete", "response.failed",
                         "error"):
            return events


async def test_text_stream_event_sequence(ws):
    await ws.send({"type": "response.create", "model": "gpt-4.1", "instructions": "Be brief.",
                   "input": [{"role": "user", "content": "Say hello."}],
                   "max_output_tokens": 8, "store": False})
    events = await _events_until_terminal(ws)
    kinds = [e["type"] for e in events]
    assert kinds[:3] == ["response.created", "response.output_item.added",
                         "response.content_part.added"]
    assert kinds.count("response.output_text.delta") >= 1
    assert kinds[-4:] == ["response.output_text.done", "response.content_part.done",
                          "response.output_item.done", events[-1]["type"]]
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    done = next(e for e in events if e["type"] == "response.output_text.done")
    assert done["text"] == text and text
    r = events[-1]["response"]
    assert r["id"] == events[0]["response"]["id"]
    assert r["output"][0]["content"][0]["text"] == text
    assert r["usage"]["output_tokens"] == r["turnspec"]["timing"]["completion_tokens"] > 0
    assert r["turnspec"]["timing"]["prompt_tokens"] == r["usage"]["input_tokens"]
    assert [e["sequence_number"] for e in events] == list(range(1, len(events) + 1))


async def test_function_call_events(ws):
    rec = await ws.create([{"role": "user", "content": "What's the weather in Paris?"}],
                          tools=[WEATHER_TOOL_FLAT], tool_choice="required",
                          max_output_tokens=40)
    assert rec.ok, rec.error
    assert rec.finish_reason == "completed"
    assert len(rec.tool_calls) == 1
    call = rec.tool_calls[0]
    assert call["name"] == "get_weather"
    assert isinstance(json.loads(call["arguments"])["city"], str)
    assert call["call_id"].startswith("call_")


async def test_previous_response_id_prefills_only_new_tokens(ws):
    r1 = await ws.create([{"role": "user", "content": "Name a fruit."}],
                         instructions="You are a helpful assistant.", max_output_tokens=12)
    assert r1.ok, r1.error
    p1, c1 = r1.usage["input_tokens"], r1.usage["output_tokens"]
    r2 = await ws.create([{"role": "user", "content": "And a vegetable?"}],
                         instructions="You are a helpful assistant.",
                         previous_response_id=r1.response_id, max_output_tokens=4)
    assert r2.ok, r2.error
    t2 = r2.timing
    assert t2["prefill_tokens"] < t2["prompt_tokens"]
    assert t2["prompt_tokens"] > p1 + c1  # the new user turn was appended
    # Turn 1's prompt + reply are reused, up to the last full KV block.
    assert p1 + c1 - BLOCK - 1 <= t2["cached_tokens"] <= p1 + c1
    assert t2["cached_tokens"] % BLOCK == 0
    assert t2["prefill_tokens"] == t2["prompt_tokens"] - t2["cached_tokens"]
    assert r2.usage["input_tokens_details"]["cached_tokens"] == t2["cached_tokens"]


async def test_unknown_previous_response_id_is_the_error_pipecat_retries_on(ws):
    rec = await ws.create("hello", previous_response_id="resp_doesnotexist",
                          max_output_tokens=2)
    assert not rec.ok
    assert rec.error["code"] == "previous_response_not_found"
    assert rec.error["param"] == "previous_response_id"
    assert (await ws.create("hello", max_output_tokens=1)).ok


async def test_cancel_stops_generation_and_frees_the_sequence(ws, server):
    rec = await ws.create([{"role": "user", "content": "Write a long story about a dragon."}],
                          max_output_tokens=400, cancel_after_chunks=2)
    assert rec.ok, rec.error
    assert rec.finish_reason == "cancelled"
    assert rec.usage["output_tokens"] < 400
    m = wait_engine_idle(server.port)
    assert m["turnspec_engine_active_sequences"] == 0
    assert m['turnspec_requests_total{outcome="cancelled",transport="ws"}'] >= 1
    assert (await ws.create("hi", max_output_tokens=1)).ok  # the connection goes on


BAD_EVENTS = [
    ("not json at all {", 400, None, None),
    (json.dumps([1, 2, 3]), 400, None, None),
    (json.dumps({"type": "session.update"}), 400, "unknown_event_type", "type"),
    (json.dumps({"type": "response.create", "input": 42}), 400, None, "input"),
    (json.dumps({"type": "response.create", "input": "hi", "temperature": "hot"}), 400, None,
     "temperature"),
    (json.dumps({"type": "response.create", "input": "hi", "max_output_tokens": 2.5}), 400,
     None, "max_output_tokens"),
    (json.dumps({"type": "response.create", "input": [{"role": "wizard", "content": "x"}]}),
     400, None, "input[0].role"),
    (json.dumps({"type": "response.create", "input": "hi", "tools": [WEATHER_TOOL_FLAT],
                 "tool_choice": {"type": "function", "name": "book_flight"}}), 400, None,
     "tool_choice.name"),
    (json.dumps({"type": "response.create", "input": "hi", "tools": [WEATHER_TOOL_FLAT],
                 "tool_choice": "sometimes"}), 400, None, "tool_choice"),
    (json.dumps({"type": "response.create", "input": "word " * 1500}), 400,
     "context_length_exceeded", "input"),
    (json.dumps({"type": "response.create", "input": "x" * (MAX_MSG + 10)}), 413,
     "message_too_large", None),
]


@pytest.mark.parametrize("raw,status,code,param", BAD_EVENTS,
                         ids=["malformed", "not-object", "unknown-type", "input-type",
                              "temperature-type", "max-tokens-type", "role", "unknown-tool",
                              "bad-tool-choice", "over-context", "oversized"])
async def test_bad_input_gets_error_and_connection_survives(ws, raw, status, code, param):
    await ws.send(raw)
    e = await ws.recv()
    assert e["type"] == "error"
    assert e["status"] == status
    err = e["error"]
    assert err["message"] and err["type"]
    if code is not None:
        assert err["code"] == code
    if param is not None:
        assert err["param"] == param
    assert (await ws.create("hi", max_output_tokens=1)).ok


async def test_second_create_while_active_is_refused(ws):
    create = {"type": "response.create", "input": "Count to fifty.", "max_output_tokens": 64}
    await ws.send(create)
    await ws.send(create)
    seen = []
    while True:
        e = await ws.recv()
        seen.append(e)
        if e["type"] == "error":
            assert e["error"]["code"] == "conversation_already_has_active_response"
            await ws.send({"type": "response.cancel"})
        if e["type"] in ("response.completed", "response.incomplete"):
            break
    assert any(e["type"] == "error" for e in seen)


def test_metrics_and_health(server):
    m = scrape(server.port)
    assert m["turnspec_ready"] == 1
    assert m["turnspec_engine_total_kv_blocks"] > 0


# Unsteered, SmolLM2 writes this call, `<tool_call>` to the stop token, in 30 tokens
# ({"city":"Paris"}); the shortest valid one ({"city":""}) takes 29.
CUT_BUDGET = 14  # the name is out, the call's arguments are not


@pytest.mark.parametrize("budget, city", [(29, ""), (30, "Paris")])
async def test_a_required_call_closes_within_a_voice_sized_budget(ws, budget, city):
    """At 29 tokens the grammar steers the string shut in time (unsteered, the call is cut);
    at 30 the model's own call fits and steering leaves it whole."""
    await ws.send({"type": "response.create", "tools": [WEATHER_TOOL_FLAT],
                   "tool_choice": "required", "max_output_tokens": budget,
                   "input": [{"role": "user", "content": "What's the weather in Paris?"}]})
    events = await _events_until_terminal(ws)
    done = [e for e in events if e["type"] == "response.output_item.done"]
    assert [e["item"]["status"] for e in done] == ["completed"]
    (args,) = [e for e in events if e["type"] == "response.function_call_arguments.done"]
    assert json.loads(args["arguments"]) == {"city": city}
    assert events[-1]["type"] == "response.completed"
    assert events[-1]["response"]["usage"]["output_tokens"] <= budget


async def test_tool_call_cut_by_max_output_tokens_is_closed_incomplete(ws):
    """A budget below the shortest valid call: the call is announced, then cut."""
    await ws.send({"type": "response.create", "tools": [WEATHER_TOOL_FLAT],
                   "tool_choice": "required", "max_output_tokens": CUT_BUDGET,
                   "input": [{"role": "user", "content": "What's the weather in Paris?"}]})
    events = await _events_until_terminal(ws)
    added = [e for e in events if e["type"] == "response.output_item.added"]
    done = [e for e in events if e["type"] == "response.output_item.done"]
    assert [e["item"]["type"] for e in added] == ["function_call"]
    assert done[0]["item"]["status"] == "incomplete"  # announced, then cut: never "completed"
    assert not any(e["type"] == "response.function_call_arguments.done" for e in events)
    terminal = events[-1]
    assert terminal["type"] == "response.incomplete"
    assert terminal["response"]["incomplete_details"]["reason"] == "max_output_tokens"


async def test_a_dropped_connection_aborts_its_turn_once(server, local_engine, monkeypatch):
    """A client that vanishes mid-stream: the turn's request reaches the engine core as one
    abort (the stream's close, not a second one from the turn), and its KV comes back."""
    import asyncio

    aborts: list[str] = []
    core_abort = local_engine.core.abort
    monkeypatch.setattr(local_engine.core, "abort",
                        lambda rid: (aborts.append(rid), core_abort(rid))[1])
    client = await ResponsesSocketClient(f"ws://127.0.0.1:{server.port}/v1/responses").connect()
    await client.send({"type": "response.create", "max_output_tokens": 300,
                       "input": [{"role": "user", "content": "Write a long story about a fox."}]})
    while (await client.recv())["type"] != "response.output_text.delta":
        pass
    await client.close()                                       # the caller hung up
    m = await asyncio.to_thread(wait_engine_idle, server.port)
    assert m["turnspec_engine_active_sequences"] == 0
    assert len(aborts) == 1, aborts
