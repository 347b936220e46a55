"""Admission control (bounded queue, 429 / RESOURCE_EXHAUSTED / WS error with a retry hint)
and graceful drain, over real sockets with the real engine."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from turnspec.loadtest.clients import (
    ChatCompletionsClient,
    GenerationClient,
    ResponsesSocketClient,
)

from .srv_helpers import start_server, wait_engine_idle

HI = [{"role": "user", "content": "hi"}]
LONG = [{"role": "user", "content": "Write a long story about a dragon."}]


@pytest.fixture(scope="module")
def server(local_engine):
    srv = start_server(local_engine, max_running=1, max_queue=1, retry_after_s=2.0)
    yield srv
    srv.stop()


async def _wait_for(pred, timeout: float = 30.0) -> None:
    for _ in range(int(timeout / 0.02)):
        if pred():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached")


async def test_full_queue_is_refused_with_retry_hint(server):
    adm = server.hub.admission
    url = f"ws://127.0.0.1:{server.port}/v1/responses"
    running = await ResponsesSocketClient(url).connect()
    queued = await ResponsesSocketClient(url).connect()
    extra = await ResponsesSocketClient(url).connect()
    http = ChatCompletionsClient(f"http://127.0.0.1:{server.port}/v1")
    grpc_c = GenerationClient(f"127.0.0.1:{server.grpc_port}")
    try:
        long_task = asyncio.create_task(running.create(LONG, max_output_tokens=400))
        await _wait_for(lambda: adm.running == 1)
        queued_task = asyncio.create_task(queued.create("hi", max_output_tokens=2))
        await _wait_for(lambda: adm.queued == 1)

        async with aiohttp.ClientSession() as s, s.post(
                f"http://127.0.0.1:{server.port}/v1/chat/completions",
                json={"messages": HI, "max_tokens": 1}) as r:
            assert r.status == 429
            assert r.headers["Retry-After"] == "2" and r.headers["retry-after-ms"] == "2000"
            assert (await r.json())["error"]["code"] == "server_busy"
        rec = await http.complete(HI, max_tokens=1)
        assert rec.error["status"] == 429
        rec = await grpc_c.generate(HI, max_tokens=1)
        assert rec.error["code"] == "RESOURCE_EXHAUSTED"
        rec = await extra.create("hi", max_output_tokens=1)
        assert rec.error["status"] == 429 and "retry after 2 s" in rec.error["message"]

        await running.send({"type": "response.cancel"})  # frees the slot for the waiter
        assert (await long_task).finish_reason == "cancelled"
        waited = await queued_task
        assert waited.ok and waited.timing["admission_ms"] > 0
        assert (await extra.create("hi", max_output_tokens=1)).ok
    finally:
        for c in (running, queued, extra, http, grpc_c):
            await c.close()
    wait_engine_idle(server.port)
    assert adm.running == 0 and adm.queued == 0


async def test_drain_refuses_new_turns_and_lets_inflight_finish(local_engine):
    srv = start_server(local_engine)
    ws = await ResponsesSocketClient(f"ws://127.0.0.1:{srv.port}/v1/responses").connect()
    try:
        inflight = asyncio.create_task(ws.create(LONG, max_output_tokens=12))
        await _wait_for(lambda: srv.hub.in_flight == 1)
        shutdown = asyncio.wrap_future(asyncio.run_coroutine_threadsafe(
            srv.app.shutdown(drain_seconds=60, stop_engine=False), srv.loop))
        await _wait_for(lambda: srv.hub.draining)
        async with aiohttp.ClientSession() as s:
            async with s.get(f"http://127.0.0.1:{srv.port}/health") as r:
                assert r.status == 503 and (await r.json())["status"] == "draining"
            async with s.post(f"http://127.0.0.1:{srv.port}/v1/chat/completions",
                              json={"messages": HI}) as r:
                assert r.status == 503
                assert (await r.json())["error"]["code"] == "server_shutting_down"
        g = GenerationClient(f"127.0.0.1:{srv.grpc_port}")
        rec = await g.generate(HI, max_tokens=1)
        await g.close()
        assert rec.error["code"] == "UNAVAILABLE"
        done = await inflight
        assert done.ok and done.usage["output_tokens"] == 12  # finished, not cut
        await shutdown
    finally:
        await ws.close()
        srv.stop()
