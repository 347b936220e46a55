"""Overload at 3x capacity on the real engine: with 2 running and 2 queued allowed, a burst of
12 turns over the three transports gets exactly two kinds of answer: served, or refused at
once with the retry hint of its transport (HTTP 429 + Retry-After, gRPC RESOURCE_EXHAUSTED
with retry-after-ms, WS `error` with code server_busy). The queue never grows past its bound,
and afterwards the server is idle and answers normally. `make stress` measures the refusal
latency and the admitted turns' TTFT under a longer overload."""

from __future__ import annotations

import asyncio

import aiohttp

from turnspec.loadtest.clients import GenerationClient, ResponsesSocketClient

from .srv_helpers import assert_serves_normally, scrape, start_server

PROMPT = [{"role": "user", "content": "Tell me a story about a fox."}]


async def test_three_times_capacity_is_served_or_refused_at_once(local_engine):
    srv = start_server(local_engine, max_running=2, max_queue=2, retry_after_s=2.0)
    adm = srv.hub.admission
    peak = [0]
    stop = asyncio.Event()

    async def watch() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], adm.queued)
            await asyncio.sleep(0.005)

    async def http(s: aiohttp.ClientSession) -> tuple[str, object]:
        async with s.post(f"http://127.0.0.1:{srv.port}/v1/chat/completions",
                          json={"messages": PROMPT, "max_tokens": 24}) as r:
            body = await r.json()
            if r.status == 429:
                assert r.headers["Retry-After"] == "2" and r.headers["retry-after-ms"] == "2000"
                return "refused", body["error"]["code"]
            return ("served" if r.status == 200 else "other"), r.status

    async def grpc_turn() -> tuple[str, object]:
        g = GenerationClient(f"127.0.0.1:{srv.grpc_port}")
        try:
            rec = await g.generate(PROMPT, max_tokens=24)
        finally:
            await g.close()
        if rec.ok:
            return "served", None
        return ("refused" if rec.error["code"] == "RESOURCE_EXHAUSTED" else "other"), rec.error

    async def ws_turn() -> tuple[str, object]:
        ws = await ResponsesSocketClient(f"ws://127.0.0.1:{srv.port}/v1/responses").connect()
        try:
            rec = await ws.create(PROMPT[0]["content"], max_output_tokens=24)
        finally:
            await ws.close()
        if rec.ok:
            return "served", None
        return ("refused" if rec.error.get("code") == "server_busy"
                and rec.error.get("status") == 429 else "other"), rec.error

    watcher = asyncio.create_task(watch())
    try:
        async with aiohttp.ClientSession() as s:
            results = await asyncio.gather(*[f() for _ in range(4)
                                             for f in (lambda: http(s), grpc_turn, ws_turn)])
    finally:
        stop.set()
        await watcher
    kinds = [k for k, _ in results]
    assert "other" not in kinds, results
    assert kinds.count("served") >= 4 and kinds.count("refused") >= 1, results
    assert {v for k, v in results if k == "refused" and isinstance(v, str)} <= {"server_busy"}
    assert peak[0] <= 2 and adm.rejected == kinds.count("refused")
    refusals = sum(v for k, v in scrape(srv.port).items()
                   if k.startswith("turnspec_refusal_seconds_count") and "server_busy" in k)
    assert refusals == kinds.count("refused")  # each refusal timed, receive -> refusal
    try:
        await assert_serves_normally(srv.port)
        assert adm.running == 0 and adm.queued == 0
    finally:
        srv.stop()
