"""Optional API key on all three transports (Bearer header, WS upgrade, gRPC metadata)."""

from __future__ import annotations

import aiohttp
import grpc
import openai
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from turnspec.loadtest.clients import GenerationClient, ResponsesSocketClient
from turnspec.server.proto.turnspec.v1 import generation_pb2 as pb
from turnspec.server.proto.turnspec.v1 import generation_pb2_grpc as pb_grpc

from .srv_helpers import start_server

KEY = "sk-test-key"
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def server(local_engine):
    srv = start_server(local_engine, api_key=KEY)
    yield srv
    srv.stop()


@pytest.mark.parametrize("header", [None, "Bearer wrong", "Basic " + KEY, KEY])
async def test_http_rejects_missing_or_wrong_key(server, header):
    headers = {"Authorization": header} if header else {}
    async with aiohttp.ClientSession() as s:
        for method, path, body in (("POST", "/v1/chat/completions", {"messages": HI}),
                                   ("GET", "/v1/models", None)):
            async with s.request(method, f"http://127.0.0.1:{server.port}{path}", json=body,
                                 headers=headers) as r:
                assert r.status == 401
                err = (await r.json())["error"]
                assert err["code"] == "invalid_api_key" and err["message"]
        async with s.get(f"http://127.0.0.1:{server.port}/health") as r:
            assert r.status == 200  # probes need no key


async def test_sdk_with_right_and_wrong_key(server):
    base = f"http://127.0.0.1:{server.port}/v1"
    async with openai.AsyncOpenAI(base_url=base, api_key="nope") as bad:
        with pytest.raises(openai.AuthenticationError):
            await bad.chat.completions.create(model="x", messages=HI, max_tokens=1)
    async with openai.AsyncOpenAI(base_url=base, api_key=KEY) as good:
        r = await good.chat.completions.create(model="x", messages=HI, max_tokens=1)
        assert r.usage.completion_tokens == 1


async def test_ws_upgrade_needs_the_key(server):
    url = f"ws://127.0.0.1:{server.port}/v1/responses"
    for key in (None, "wrong"):
        with pytest.raises(aiohttp.WSServerHandshakeError) as info:
            await ResponsesSocketClient(url, api_key=key).connect()
        assert info.value.status == 401
    ws = await ResponsesSocketClient(url, api_key=KEY).connect()
    try:
        assert (await ws.create("hi", max_output_tokens=1)).ok
    finally:
        await ws.close()


async def test_grpc_metadata_key(server):
    target = f"127.0.0.1:{server.grpc_port}"
    for key in (None, "wrong"):
        c = GenerationClient(target, api_key=key)
        rec = await c.generate(HI, max_tokens=1)
        assert not rec.ok and rec.error["code"] == "UNAUTHENTICATED"
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await c.abort("x")
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        await c.close()
    c = GenerationClient(target, api_key=KEY)
    assert (await c.generate(HI, max_tokens=1)).ok
    await c.close()
    async with grpc.aio.insecure_channel(target) as ch:  # health needs no key
        r = await health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest())
        assert r.status == health_pb2.HealthCheckResponse.SERVING
        stub = pb_grpc.GenerationStub(ch)
        with pytest.raises(grpc.aio.AioRpcError):
            async for _ in stub.Generate(pb.GenerateRequest(), metadata=(("authorization",
                                                                          "Bearer x"),)):
                pass
