"""A fault inside one engine step, end to end: the turns in that step fail with a clear error
on every transport (WS `response.failed`, HTTP 500 in the error shape, gRPC INTERNAL), a turn
that was not in the step is untouched, and the server serves on with no sequence left.
The fault comes through `EngineCore.fault_hook` (test-only)."""

from __future__ import annotations

import asyncio

import pytest

from turnspec.loadtest.clients import (
    ChatCompletionsClient,
    GenerationClient,
    ResponsesSocketClient,
)

from .srv_helpers import assert_serves_normally, start_server

HI = [{"role": "user", "content": "Say something about fault tolerance."}]


@pytest.fixture
def faulty(local_engine):
    def hook(batch):
        if batch.kind == "prefill" and any("poison" in s.request_id for s in batch.seqs):
            raise RuntimeError("injected fault")
    srv = start_server(local_engine)  # loads the engine (and its core) if still cold
    local_engine.core.fault_hook = hook
    yield srv
    local_engine.core.fault_hook = None
    srv.stop()


async def _until_terminal(ws: ResponsesSocketClient) -> dict:
    while (e := await ws.recv())["type"] not in ("response.completed", "response.failed",
                                                  "response.incomplete"):
        pass
    return e


async def test_only_the_faulted_step_fails(faulty):
    url = f"ws://127.0.0.1:{faulty.port}/v1/responses"
    bystander = await ResponsesSocketClient(url).connect()
    http = ChatCompletionsClient(f"http://127.0.0.1:{faulty.port}/v1")
    grpc_c = GenerationClient(f"127.0.0.1:{faulty.grpc_port}")
    try:
        # The bystander must be past its prefill before the poisoned turns arrive, or the
        # scheduler may put them in one prefill step: wait for its first text delta.
        await bystander.send({"type": "response.create", "input": "Count to twenty.",
                              "max_output_tokens": 24})
        while (await bystander.recv())["type"] != "response.output_text.delta":
            pass
        running = asyncio.create_task(_until_terminal(bystander))
        rec = await http.complete(HI, max_tokens=8, request_id="poison-http")
        assert rec.error["status"] == 500 and rec.error["code"] == "engine_error"
        assert "engine prefill step failed: RuntimeError: injected fault" in \
            rec.error["message"]
        rec = await grpc_c.generate(HI, max_tokens=8, request_id="poison-grpc")
        assert rec.error["code"] == "INTERNAL" and "injected fault" in rec.error["message"]
        done = await running
        assert done["type"] == "response.incomplete"  # a bystander in another step, cut
        assert done["response"]["incomplete_details"]["reason"] == "max_output_tokens"
        assert done["response"]["usage"]["output_tokens"] == 24
    finally:
        for c in (bystander, http, grpc_c):
            await c.close()
    await assert_serves_normally(faulty.port)


async def test_ws_turn_in_a_faulted_step_ends_failed(local_engine):
    def hook(batch):
        if batch.kind == "decode":
            raise RuntimeError("injected decode fault")
    srv = start_server(local_engine)
    ws = await ResponsesSocketClient(f"ws://127.0.0.1:{srv.port}/v1/responses").connect()
    try:
        local_engine.core.fault_hook = hook
        await ws.send({"type": "response.create", "input": "hi", "max_output_tokens": 8})
        e = await _until_terminal(ws)
        local_engine.core.fault_hook = None
        assert e["type"] == "response.failed"
        assert e["response"]["error"]["code"] == "engine_error"
        assert "engine decode step failed: RuntimeError" in e["response"]["error"]["message"]
        assert (await ws.create("hi", max_output_tokens=4)).ok  # same connection, served
        await assert_serves_normally(srv.port)
    finally:
        local_engine.core.fault_hook = None
        await ws.close()
        srv.stop()
