"""gRPC turnspec.v1.Generation, health and reflection over a real socket, real SmolLM2."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request

import grpc
import pytest
from google.protobuf import descriptor_pool, message_factory
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from turnspec.loadtest.clients import GenerationClient
from turnspec.server.config import ServerConfig
from turnspec.server.proto.turnspec.v1 import generation_pb2 as pb
from turnspec.server.proto.turnspec.v1 import generation_pb2_grpc as pb_grpc
from turnspec.server.testing import ThreadedServer

from .srv_helpers import WEATHER_TOOL, scrape, start_server, wait_engine_idle

SERVICE = "turnspec.v1.Generation"
MAX_MSG = 64 * 1024


@pytest.fixture(scope="module")
def server(local_engine):
    srv = start_server(local_engine, max_message_bytes=MAX_MSG)
    yield srv
    srv.stop()


@pytest.fixture
async def client(server):
    c = GenerationClient(f"127.0.0.1:{server.grpc_port}")
    yield c
    await c.close()


def _health(port: int, service: str) -> int:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        return health_pb2_grpc.HealthStub(ch).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=10).status


def _http_health(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_health_not_serving_until_warm(local_engine):
    srv = ThreadedServer(local_engine, ServerConfig(port=0, grpc_port=0),
                         stop_engine=False).start(warm=False)
    try:
        for name in ("", SERVICE):
            assert _health(srv.grpc_port, name) == health_pb2.HealthCheckResponse.NOT_SERVING
        assert _http_health(srv.port) == 503
        srv.call(srv.app.start_engine())
        for name in ("", SERVICE):
            assert _health(srv.grpc_port, name) == health_pb2.HealthCheckResponse.SERVING
        assert _http_health(srv.port) == 200
    finally:
        srv.stop()


def test_client_built_from_reflection_only(server):
    """No generated stubs: list services, resolve types, call Generate from descriptors."""
    with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as ch:
        db = ProtoReflectionDescriptorDatabase(ch)
        assert SERVICE in db.get_services()
        pool = descriptor_pool.DescriptorPool(db)
        method = pool.FindServiceByName(SERVICE).FindMethodByName("Generate")
        assert method.server_streaming and not method.client_streaming
        Req = message_factory.GetMessageClass(method.input_type)
        Resp = message_factory.GetMessageClass(method.output_type)
        req = Req()
        m = req.messages.add()
        m.role, m.content = "user", "Say hello."
        req.sampling.max_tokens = 6
        call = ch.unary_stream(f"/{SERVICE}/Generate", request_serializer=Req.SerializeToString,
                               response_deserializer=Resp.FromString)
        responses = list(call(req, timeout=120))
    kinds = [r.WhichOneof("kind") for r in responses]
    assert kinds[-1] == "complete" and kinds[:-1] and set(kinds[:-1]) == {"delta"}
    last = responses[-1]
    assert last.complete.finish_reason == "length"
    assert last.usage.completion_tokens == 6 and last.usage.prompt_tokens > 0
    assert [r.usage.completion_tokens for r in responses] == sorted(
        r.usage.completion_tokens for r in responses)  # cumulative
    assert last.complete.timing.prompt_tokens == last.usage.prompt_tokens
    assert "".join(r.delta.text for r in responses[:-1])


async def test_tool_call_deltas(client):
    rec = await client.generate([{"role": "user", "content": "Weather in Oslo?"}],
                                tools=[WEATHER_TOOL], tool_choice="get_weather", max_tokens=40)
    assert rec.ok, rec.error
    assert rec.finish_reason == "tool_calls"
    assert rec.tool_calls[0]["name"] == "get_weather"
    assert isinstance(json.loads(rec.tool_calls[0]["arguments"])["city"], str)


def _bad(**kw) -> pb.GenerateRequest:
    req = pb.GenerateRequest(messages=[pb.Message(role="user", content="hi")])
    for k, v in kw.items():
        if k == "messages":
            del req.messages[:]
            req.messages.extend(v)
        elif k == "tools":
            req.tools.extend(v)
        elif k == "tool_choice":
            req.tool_choice.CopyFrom(v)
        elif k == "sampling":
            req.sampling.CopyFrom(v)
    return req


BAD_REQUESTS = [
    ("role", _bad(messages=[pb.Message(role="narrator", content="x")]), "INVALID_ARGUMENT"),
    ("no-messages", _bad(messages=[]), "INVALID_ARGUMENT"),
    ("parameters-json", _bad(tools=[pb.Tool(name="t", parameters_json="{oops")]),
     "INVALID_ARGUMENT"),
    ("unknown-tool-choice", _bad(tools=[pb.Tool(name="t")],
                                 tool_choice=pb.ToolChoice(function_name="nope")),
     "INVALID_ARGUMENT"),
    ("bad-mode", _bad(tools=[pb.Tool(name="t")], tool_choice=pb.ToolChoice(mode="often")),
     "INVALID_ARGUMENT"),
    ("temperature", _bad(sampling=pb.SamplingParams(temperature=9.0)), "INVALID_ARGUMENT"),
    ("over-context", _bad(messages=[pb.Message(role="user", content="word " * 1500)]),
     "INVALID_ARGUMENT"),
    ("oversized", _bad(messages=[pb.Message(role="user", content="x" * (MAX_MSG + 1))]),
     "RESOURCE_EXHAUSTED"),
]


@pytest.mark.parametrize("req,code", [b[1:] for b in BAD_REQUESTS],
                         ids=[b[0] for b in BAD_REQUESTS])
async def test_bad_request_status_codes(server, client, req, code):
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as ch:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            async for _ in pb_grpc.GenerationStub(ch).Generate(req, timeout=60):
                pass
    assert info.value.code().name == code
    assert info.value.details()
    rec = await client.generate([{"role": "user", "content": "hi"}], max_tokens=1)
    assert rec.ok, rec.error


async def test_malformed_bytes_get_a_status_and_server_survives(server, client):
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as ch:
        raw = ch.unary_stream(f"/{SERVICE}/Generate", request_serializer=lambda b: b,
                              response_deserializer=lambda b: b)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            async for _ in raw(b"\xff\xff\xff\x0fgarbage", timeout=30):
                pass
    assert info.value.code() != grpc.StatusCode.OK
    assert (await client.generate([{"role": "user", "content": "hi"}], max_tokens=1)).ok


async def test_deadline_aborts_engine_request(server, client):
    rec = await client.generate([{"role": "user", "content": "Write a long story."}],
                                max_tokens=400, timeout_s=1.0)
    assert not rec.ok and rec.error["code"] == "DEADLINE_EXCEEDED"
    m = wait_engine_idle(server.port)
    assert m["turnspec_engine_active_sequences"] == 0


async def test_abort_rpc_and_duplicate_id(server, client):
    rid = "grpc-abort-test"
    task = asyncio.create_task(client.generate(
        [{"role": "user", "content": "Write a long story."}], max_tokens=400, request_id=rid))
    for _ in range(200):  # wait until it is in flight
        if scrape(server.port)["turnspec_engine_active_sequences"] > 0:
            break
        await asyncio.sleep(0.05)
    dup = await client.generate([{"role": "user", "content": "hi"}], max_tokens=1,
                                request_id=rid)
    assert not dup.ok and dup.error["code"] == "ALREADY_EXISTS"
    assert await client.abort(rid) is True
    rec = await task
    assert rec.ok and rec.finish_reason == "cancelled"
    assert rec.usage["completion_tokens"] < 400
    assert await client.abort(rid) is False
    assert wait_engine_idle(server.port)["turnspec_engine_active_sequences"] == 0
