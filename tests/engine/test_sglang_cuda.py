"""`turnspec serve --engine sglang` on a GPU (skipped without sglang and CUDA): the three front
ends over SGLang with our exported DFlash drafter. A WS Responses turn with a tool call, an HTTP
chat completion, a gRPC Generate, a barge-in, and turn-2 KV reuse through SGLang's radix cache.
On the H200: scripts/gpu/README.md (SGLang); the drafter folder comes from
TURNSPEC_SGLANG_DRAFTER (what `turnspec speculator export` wrote), else the committed one."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import aiohttp
import pytest

from turnspec.engine.drafter import DEFAULT_DRAFTER_DIR
from turnspec.loadtest.clients import GenerationClient, ResponsesSocketClient

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("sglang") is None
    or not __import__("torch").cuda.is_available(), reason="needs sglang and CUDA")

WEATHER = {"type": "function", "name": "get_weather", "description": "Weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]}}
ASK = [{"role": "user", "content": "What's the weather in Paris?"}]
SUMMARY: dict[str, object] = {}


@pytest.fixture(scope="module")
def server(smollm2_dir: Path):
    drafter = os.environ.get("TURNSPEC_SGLANG_DRAFTER", str(DEFAULT_DRAFTER_DIR))
    cmd = [sys.executable, "-m", "turnspec.cli.main", "serve", "--engine", "sglang",
           "--model", str(smollm2_dir), "--speculator", drafter, "--port", "0",
           "--grpc-port", "0", "--default-max-tokens", "64",
           "--sglang-arg", "cuda_graph_max_bs_decode=32"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout] and lines.put(None),
                     daemon=True).start()
    seen, port, grpc_port, t0 = [], None, None, time.monotonic()
    while True:
        line = lines.get(timeout=900)
        assert line is not None, "serve exited:\n" + "".join(seen[-60:])
        seen.append(line)
        if m := re.search(r"listening on http://127\.0\.0\.1:(\d+) .* gRPC 127\.0\.0\.1:(\d+)",
                          line):
            port, grpc_port = int(m.group(1)), int(m.group(2))
        if "turnspec: ready" in line:
            break
    SUMMARY["startup_s"] = round(time.monotonic() - t0, 1)
    yield port, grpc_port
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(120)
    except subprocess.TimeoutExpired:
        proc.kill()
    out = os.environ.get("OUT")
    if out:
        Path(out, "sglang_checks.json").write_text(json.dumps(SUMMARY, indent=1))
        Path(out, "sglang_serve.log").write_text("".join(seen[-400:]))


def _adds_up(t: dict) -> None:
    parts = t["host_overhead_ms"] + t["queue_ms"] + t["prefill_ms"] + t["decode_ms"]
    assert t["server_e2e_ms"] == pytest.approx(parts, abs=0.005) and t["host_overhead_ms"] >= 0


async def test_ws_tool_call_turn_with_dflash(server):
    port, _ = server
    ws = await ResponsesSocketClient(f"ws://127.0.0.1:{port}/v1/responses").connect()
    try:
        rec = await ws.create(ASK, tools=[WEATHER], tool_choice="required", max_output_tokens=64)
    finally:
        await ws.close()
    assert rec.ok, rec.error
    assert rec.tool_calls and rec.tool_calls[0]["name"] == "get_weather"
    assert isinstance(json.loads(rec.tool_calls[0]["arguments"])["city"], str)
    _adds_up(rec.timing)
    assert rec.timing["tool_call_ms"] is not None
    spec = rec.turnspec["spec"]
    assert spec and spec["verify_steps"] > 0 and spec["tau"] >= 1.0
    SUMMARY["ws_tool_call"] = {"args": rec.tool_calls[0]["arguments"], "tau": spec["tau"],
                               "timing": rec.timing}


async def test_http_chat_completion(server):
    port, _ = server
    async with aiohttp.ClientSession() as s, s.post(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            json={"model": "x", "messages": [{"role": "user", "content": "Say hello."}],
                  "max_tokens": 24}) as r:
        body = await r.json()
    assert r.status == 200, body
    assert body["choices"][0]["message"]["content"] and body["usage"]["completion_tokens"] > 0
    _adds_up(body["turnspec"]["timing"])
    SUMMARY["http"] = {"text": body["choices"][0]["message"]["content"],
                       "usage": body["usage"], "spec": body["turnspec"]["spec"]}


async def test_grpc_generate(server):
    _, grpc_port = server
    client = GenerationClient(f"127.0.0.1:{grpc_port}")
    try:
        rec = await client.generate([{"role": "user", "content": "Name a colour."}],
                                    max_tokens=16)
    finally:
        await client.close()
    assert rec.ok and rec.text and rec.finish_reason in ("stop", "length"), rec.error
    SUMMARY["grpc"] = {"text": rec.text, "finish_reason": rec.finish_reason}


async def test_barge_in_aborts_and_the_next_turn_runs(server):
    port, _ = server
    ws = await ResponsesSocketClient(f"ws://127.0.0.1:{port}/v1/responses").connect()
    try:
        rec = await ws.create([{"role": "user", "content": "Write a long story about a fox."}],
                              max_output_tokens=400, cancel_after_chunks=2)
        assert rec.ok and rec.finish_reason == "cancelled", rec.error
        assert rec.usage["output_tokens"] < 400
        after = await ws.create("Say yes.", max_output_tokens=4)
        assert after.ok, after.error
    finally:
        await ws.close()
    async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{port}/metrics") as r:
        text = await r.text()
    assert "turnspec_engine_active_sequences 0.0" in text  # SGLang finished the aborted rid
    SUMMARY["barge_in"] = {"output_tokens": rec.usage["output_tokens"]}


async def test_turn_two_reuses_the_kv_of_turn_one(server):
    port, _ = server
    ws = await ResponsesSocketClient(f"ws://127.0.0.1:{port}/v1/responses").connect()
    system = "You are a phone agent for a dental clinic. Be brief. " * 6
    try:
        one = await ws.create([{"role": "user", "content": "Hi, can I book a cleaning?"}],
                              instructions=system, max_output_tokens=24)
        two = await ws.create([{"role": "user", "content": "Friday morning, please."}],
                              instructions=system, previous_response_id=one.response_id,
                              max_output_tokens=24)
    finally:
        await ws.close()
    assert one.ok and two.ok, (one.error, two.error)
    cached = two.usage["input_tokens_details"]["cached_tokens"]
    assert cached >= one.usage["input_tokens"] - 16, (cached, one.usage)  # all of turn 1's prompt
    SUMMARY["kv_reuse"] = {"turn1_input": one.usage["input_tokens"],
                           "turn2_input": two.usage["input_tokens"], "turn2_cached": cached}


async def test_a_warm_up_has_sglang_compile_the_tools_before_the_turn(server):
    """`generate: false` with tools: the server builds their structural tag and has SGLang
    compile it (SGLangEngine.prepare_grammar, a one-token request); the turn after it calls the
    tool under that grammar. Its grammar wait and TTFT go to the summary (not asserted)."""
    port, _ = server
    tool = {**WEATHER, "name": "get_weather_warmed"}
    ws = await ResponsesSocketClient(f"ws://127.0.0.1:{port}/v1/responses").connect()
    try:
        warm = await ws.create([], tools=[tool], generate=False)
        assert warm.ok and warm.response_id, warm.error
        await asyncio.sleep(1.0)  # a caller who has not spoken yet
        rec = await ws.create(ASK, tools=[tool], tool_choice="required", max_output_tokens=64,
                              previous_response_id=warm.response_id)
    finally:
        await ws.close()
    assert rec.ok, rec.error
    assert rec.tool_calls and rec.tool_calls[0]["name"] == "get_weather_warmed"
    SUMMARY["warmed_tool_turn"] = {"grammar_ms": rec.timing["grammar_ms"],
                                   "ttft_ms": rec.ttft_ms, "timing": rec.timing}
