"""The engine dies under the server, end to end over the three transports on 127.0.0.1.

The engine is the real SGLangEngine over a stand-in for `sglang.Engine` whose scheduler is a
real child process, the fake SGLang scheduler (tests/engine/sglang_standin.py): the test kills
it with -9 while a WS, an HTTP and a gRPC turn stream. Every one of them ends with a clear
error (WS `response.failed`, an SSE error chunk, gRPC UNAVAILABLE, all `engine_unavailable`);
health answers 503 "failed" and gRPC NOT_SERVING; a new turn gets a retryable 503; and the
server decides to exit with EXIT_ENGINE_FAILED once the errors are out (`exit`, a callable
here, is what ends the process in `turnspec serve`)."""

from __future__ import annotations

import asyncio
import signal
import threading
import urllib.error
import urllib.request

import aiohttp
import pytest
from grpc_health.v1 import health_pb2

from tests.engine.sglang_standin import StandInSGLang
from turnspec.engine.sglang import SGLangConfig, SGLangEngine
from turnspec.loadtest.clients import (
    ChatCompletionsClient,
    GenerationClient,
    ResponsesSocketClient,
)
from turnspec.server.app import EXIT_ENGINE_FAILED, ServerApp
from turnspec.server.config import ServerConfig
from turnspec.server.testing import ThreadedServer

from .srv_helpers import scrape

HI = [{"role": "user", "content": "Tell me a long story."}]


@pytest.fixture
def dying(smollm2_dir):
    built: list[StandInSGLang] = []

    def launch(**kwargs):
        built.append(StandInSGLang(step_s=0.02, **kwargs))
        return built[-1]
    exits: list[int] = []
    exited = threading.Event()

    def exit_(code: int) -> None:
        exits.append(code)
        exited.set()
    engine = SGLangEngine(SGLangConfig(model_dir=str(smollm2_dir), stats_interval_s=0.02),
                          launch=launch)
    srv = ThreadedServer(engine, ServerConfig(host="127.0.0.1", port=0, grpc_port=0,
                                              default_max_tokens=16), exit=exit_).start()
    yield srv, built[0], exits, exited
    srv.stop()
    built[0].reap()


def _health(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


async def _until_running(port: int, n: int) -> None:
    """/metrics shows `n` sequences in SGLang (its load snapshot, through stats())."""
    for _ in range(3000):  # a hang guard (30 s), not a timing assertion
        if (await asyncio.to_thread(scrape, port))["turnspec_engine_active_sequences"] == n:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never {n} running: {scrape(port)}")


async def test_scheduler_killed_under_load(dying) -> None:
    srv, rt, exits, exited = dying
    ws = await ResponsesSocketClient(f"ws://127.0.0.1:{srv.port}/v1/responses").connect()
    http = ChatCompletionsClient(f"http://127.0.0.1:{srv.port}/v1")
    grpc_c = GenerationClient(f"127.0.0.1:{srv.grpc_port}")
    try:
        assert _health(srv.port)[0] == 200
        turns = [asyncio.create_task(c) for c in (
            ws.create(HI, max_output_tokens=4000), http.complete(HI, max_tokens=4000),
            grpc_c.generate(HI, max_tokens=4000))]
        await _until_running(srv.port, 3)
        m = scrape(srv.port)
        assert m["turnspec_engine_total_kv_blocks"] == 4096  # the fake scheduler's pool
        assert m["turnspec_engine_used_kv_blocks"] > 0

        rt.scheduler.send_signal(signal.SIGKILL)
        ws_rec, http_rec, grpc_rec = await asyncio.wait_for(asyncio.gather(*turns), 30)
        for rec in (ws_rec, http_rec):
            assert rec.text and rec.error["code"] == "engine_unavailable", rec.error
            assert "killed by SIGKILL" in rec.error["message"]
        assert grpc_rec.text and grpc_rec.error["code"] == "UNAVAILABLE", grpc_rec.error
        assert grpc_rec.error["message"].startswith("engine_unavailable: ")

        status, body = _health(srv.port)
        assert status == 503 and '"status": "failed"' in body and "SIGKILL" in body
        check = await grpc_c.health.Check(health_pb2.HealthCheckRequest(service=""))
        assert check.status == health_pb2.HealthCheckResponse.NOT_SERVING
        assert scrape(srv.port)["turnspec_engine_failed"] == 1

        late = await ws.create("hi", max_output_tokens=4)  # the same connection, refused
        assert late.error["status"] == 503 and late.error["code"] == "engine_unavailable"
        async with aiohttp.ClientSession() as s, s.post(
                f"http://127.0.0.1:{srv.port}/v1/chat/completions",
                json={"model": "x", "messages": HI}) as r:
            assert r.status == 503 and r.headers["Retry-After"] == "1"
            assert (await r.json())["error"]["code"] == "engine_unavailable"
        late = await grpc_c.generate(HI, max_tokens=4)
        assert late.error["code"] == "UNAVAILABLE", late.error
    finally:
        for c in (ws, http, grpc_c):
            await c.close()
    assert await asyncio.to_thread(exited.wait, 30)
    assert exits == [EXIT_ENGINE_FAILED]  # once, after the errors went out


async def test_serve_until_signal_ends_with_status_69(smollm2_dir) -> None:
    """Without an `exit` callable (as `turnspec serve` runs it, its loop in the main thread):
    the death stops `serve_until_signal` with exit_code 69, after the turn's error went out;
    the shutdown kills what is left of SGLang instead of waiting on its own shutdown."""
    built: list[StandInSGLang] = []

    def launch(**kwargs):
        built.append(StandInSGLang(step_s=0.02, **kwargs))
        return built[-1]
    app = ServerApp(SGLangEngine(SGLangConfig(model_dir=str(smollm2_dir)), launch=launch),
                    ServerConfig(host="127.0.0.1", port=0, grpc_port=None))
    await app.start()
    serving = asyncio.create_task(app.serve_until_signal())
    ws = await ResponsesSocketClient(f"ws://127.0.0.1:{app.port}/v1/responses").connect()
    try:
        turn = asyncio.create_task(ws.create(HI, max_output_tokens=4000))
        await _until_running(app.port, 1)
        built[0].scheduler.kill()
        rec = await asyncio.wait_for(turn, 30)
        assert rec.error["code"] == "engine_unavailable", rec.error
        await asyncio.wait_for(serving, 30)
    finally:
        await ws.close()
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGQUIT, signal.SIG_DFL)  # the dead engine left it ignored
    assert app.exit_code == EXIT_ENGINE_FAILED
    assert not built[0].shut_down and built[0].reap() == -signal.SIGKILL
