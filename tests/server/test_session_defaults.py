"""The server's voice-safe defaults: sampling and budget applied only where the request gives
none, the loop guard on by default with a per-request and a server opt-out, and a looping turn
over the WebSocket ending `completed` with the reason in its `turnspec` block and log line."""

from __future__ import annotations

import logging

import pytest

from turnspec.engine.loop_guard import LOOP_GUARD_STOP, LoopGuard
from turnspec.loadtest.clients import ResponsesSocketClient
from turnspec.server.errors import ApiError
from turnspec.server.session import Session, TurnRequest
from turnspec.server.transports.openai_chat import parse_chat_request
from turnspec.server.transports.ws_responses import parse_create

from .srv_helpers import start_server

# Greedy SmolLM2 repeats one sentence here; the default guard ends it ~65 tokens in
# (tests/engine/local/test_loop_guard_smollm2.py).
LOOPING = "Write a song chorus that repeats three times."


@pytest.fixture(scope="module")
def server(local_engine):
    srv = start_server(local_engine, default_temperature=0.6, default_top_p=0.9)
    yield srv
    srv.stop()


def _sampling(server, **fields):
    session = Session(server.hub, "ws")
    return session._sampling(TurnRequest(messages=[], **fields), 100, "input")


def test_defaults_apply_only_where_the_request_gives_none(server) -> None:
    s = _sampling(server)
    assert (s.temperature, s.top_p, s.max_tokens) == (0.6, 0.9, 16)
    assert s.loop_guard == LoopGuard()
    s = _sampling(server, temperature=0.0, top_p=1.0, max_tokens=40)
    assert (s.temperature, s.top_p, s.max_tokens, s.greedy) == (0.0, 1.0, 40, True)
    assert _sampling(server, loop_guard=False).loop_guard is None


def test_server_opt_out_and_config_checks(local_engine) -> None:
    from turnspec.server.config import ServerConfig

    srv = start_server(local_engine, loop_guard=False)
    try:
        assert _sampling(srv).loop_guard is None
        assert _sampling(srv, loop_guard=True).loop_guard == LoopGuard()
    finally:
        srv.stop()
    with pytest.raises(ValueError, match="default_temperature: expected a number in"):
        ServerConfig(default_temperature=-1)
    with pytest.raises(ValueError, match="default_top_p: expected a number in"):
        ServerConfig(default_top_p=0)


def test_wire_field_loop_guard() -> None:
    req, _ = parse_create({"input": "hi", "loop_guard": False}, 0.0, 0.0)
    assert req.loop_guard is False
    req, _ = parse_create({"input": "hi"}, 0.0, 0.0)
    assert req.loop_guard is None
    req, _, _ = parse_chat_request({"messages": [{"role": "user", "content": "hi"}],
                                    "loop_guard": False}, 0.0, 0.0)
    assert req.loop_guard is False
    with pytest.raises(ApiError, match="loop_guard: expected true or false"):
        parse_chat_request({"messages": [{"role": "user", "content": "hi"}],
                            "loop_guard": "no"}, 0.0, 0.0)


async def test_a_looping_turn_completes_with_the_guards_reason(server, caplog) -> None:
    ws = await ResponsesSocketClient(f"ws://127.0.0.1:{server.port}/v1/responses").connect()
    try:
        turn = {"type": "response.create", "temperature": 0.0, "max_output_tokens": 96,
                "input": [{"role": "user", "content": LOOPING}]}
        with caplog.at_level(logging.INFO, logger="turnspec.server"):
            guarded = await _terminal(ws, turn)
        assert guarded["type"] == "response.completed"
        block = guarded["response"]["turnspec"]
        assert block["stop_reason"] == LOOP_GUARD_STOP
        assert guarded["response"]["usage"]["output_tokens"] < 96
        assert any(f"stop_reason={LOOP_GUARD_STOP}" in r.getMessage() for r in caplog.records)
        free = await _terminal(ws, {**turn, "loop_guard": False})
        assert free["type"] == "response.incomplete"  # the same loop, run to its budget
        assert "stop_reason" not in free["response"]["turnspec"]
    finally:
        await ws.close()


async def _terminal(ws: ResponsesSocketClient, event: dict) -> dict:
    await ws.send(event)
    while True:
        e = await ws.recv()
        if e["type"] in ("response.completed", "response.incomplete", "response.failed",
                         "error"):
            return e
