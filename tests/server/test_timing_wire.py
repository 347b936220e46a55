"""The timing contract on the wire, per transport, with the real SmolLM2: every server event
carries the server's clock (`turnspec.t_us` / `server_time_us`), the completion's block adds
up (server E2E = host overhead + queue + prefill + decode) and carries the voice measures, and
the WebSocket answers `ping`."""

from __future__ import annotations

import json
import time

import aiohttp
import grpc
import pytest

from turnspec.loadtest.clients import ResponsesSocketClient
from turnspec.server.proto.turnspec.v1 import generation_pb2 as pb
from turnspec.server.proto.turnspec.v1 import generation_pb2_grpc as pb_grpc

from .srv_helpers import WEATHER_TOOL, WEATHER_TOOL_FLAT, start_server

SAY = [{"role": "system", "content": "Answer in two short sentences."},
       {"role": "user", "content": "Tell me about the moon."}]
ASK = [{"role": "user", "content": "What's the weather in Paris?"}]


@pytest.fixture(scope="module")
def server(local_engine):
    srv = start_server(local_engine, default_max_tokens=48)
    yield srv
    srv.stop()


def _adds_up(t: dict) -> None:
    parts = t["host_overhead_ms"] + t["queue_ms"] + t["prefill_ms"] + t["decode_ms"]
    assert t["server_e2e_ms"] == pytest.approx(parts, abs=0.005)
    assert t["host_overhead_ms"] >= 0 and t["queue_ms"] >= t["engine_queue_ms"] >= 0
    assert t["server_ttft_ms"] <= t["server_e2e_ms"]
    assert t["server_received_unix_us"] // 1000 == int(t["server_received_unix_ms"])


def _clock_ok(t_us: int, before_us: int) -> None:
    assert before_us <= t_us <= time.time_ns() // 1000  # same host: the server's clock


async def test_ws_events_carry_the_clock_and_the_block_adds_up(server):
    ws = await ResponsesSocketClient(f"ws://127.0.0.1:{server.port}/v1/responses").connect()
    try:
        before = time.time_ns() // 1000
        await ws.send({"type": "ping", "event_id": "p1"})
        pong = await ws.recv()
        assert pong["type"] == "pong" and pong["event_id"] == "p1"
        _clock_ok(pong["turnspec"]["t_us"], before)
        await ws.send({"type": "response.create", "input": SAY, "max_output_tokens": 40})
        events = []
        while not events or events[-1]["type"] not in ("response.completed",
                                                         "response.incomplete"):
            events.append(await ws.recv())
        stamps = [e["turnspec"]["t_us"] for e in events]
        assert stamps == sorted(stamps) and all(s >= before for s in stamps)
        t = events[-1]["response"]["turnspec"]["timing"]
        _adds_up(t)
        assert t["ttfs_ms"] is not None and t["server_ttft_ms"] <= t["ttfs_ms"]
        assert t["tool_call_ms"] is None
    finally:
        await ws.close()


async def test_ws_tool_call_carries_its_latency(server):
    ws = await ResponsesSocketClient(f"ws://127.0.0.1:{server.port}/v1/responses").connect()
    try:
        rec = await ws.create(ASK, tools=[WEATHER_TOOL_FLAT], tool_choice="required",
                              max_output_tokens=64)
        assert rec.ok and rec.tool_calls, rec.error
        t = rec.timing
        _adds_up(t)
        assert 0 < t["server_ttft_ms"] <= t["tool_call_ms"] <= t["server_e2e_ms"]
    finally:
        await ws.close()


async def test_sse_chunks_carry_the_clock_and_the_final_block_adds_up(server):
    before = time.time_ns() // 1000
    chunks = []
    async with aiohttp.ClientSession() as s, s.post(
            f"http://127.0.0.1:{server.port}/v1/chat/completions",
            json={"model": "x", "messages": SAY, "max_tokens": 40, "stream": True,
                  "stream_options": {"include_usage": True}}) as r:
        async for raw in r.content:
            line = raw.strip()
            if line.startswith(b"data: {"):
                chunks.append(json.loads(line[6:]))
    stamped = [c["turnspec"]["t_us"] for c in chunks if "turnspec" in c]
    assert len(stamped) == len(chunks) - 1  # all but the usage chunk, sent with the last one
    assert stamped == sorted(stamped) and stamped[0] >= before
    block = next(c["turnspec"] for c in reversed(chunks) if "timing" in c.get("turnspec", {}))
    _adds_up(block["timing"])
    assert block["timing"]["completion_tokens"] == chunks[-1]["usage"]["completion_tokens"]


async def test_grpc_messages_carry_the_clock_and_the_block_adds_up(server):
    before = time.time_ns() // 1000
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as ch:
        stub = pb_grpc.GenerationStub(ch)
        req = pb.GenerateRequest(messages=[pb.Message(role="user", content=ASK[0]["content"])],
                                 tools=[pb.Tool(name="get_weather",
                                                parameters_json=json.dumps(
                                                    WEATHER_TOOL["function"]["parameters"]))],
                                 tool_choice=pb.ToolChoice(mode="required"))
        req.sampling.max_tokens = 64
        out = [r async for r in stub.Generate(req)]
    stamps = [r.server_time_us for r in out]
    assert stamps == sorted(stamps) and stamps[0] >= before
    t = out[-1].complete.timing
    block = {f.name: getattr(t, f.name) for f in t.DESCRIPTOR.fields}
    _adds_up(block)
    assert t.HasField("tool_call_ms") and 0 < t.tool_call_ms <= t.server_e2e_ms
    # the host overhead's own steps, as over WS and HTTP (the load test splits it by them)
    assert t.receive_ms > 0 and 0 < t.render_ms <= t.host_overhead_ms
    assert 0 <= t.render_wait_ms <= t.render_ms and t.grammar_ms >= 0
