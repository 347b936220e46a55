"""One trace per turn, per transport, through the SDK's in-memory exporter: the span tree sits
under the client's trace id with the right parents, and its attributes carry the turn's real
values (usage, the engine's τ, tool-call latency); /metrics parses with prometheus_client and
its counters move by what N requests did."""

from __future__ import annotations

import json
import time

import aiohttp
import grpc
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from turnspec.loadtest.clients import ResponsesSocketClient
from turnspec.server.proto.turnspec.v1 import generation_pb2 as pb
from turnspec.server.proto.turnspec.v1 import generation_pb2_grpc as pb_grpc

from .srv_helpers import BLOCK, WEATHER_TOOL, WEATHER_TOOL_FLAT, scrape, start_server

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{CLIENT_SPAN}-01"
HOPS = ["turnspec.receive", "turnspec.template", "turnspec.admission", "turnspec.engine.queue",
        "turnspec.engine.prefill", "turnspec.engine.decode", "turnspec.send"]
SAY = [{"role": "user", "content": "Tell me about the moon in two sentences."}]


@pytest.fixture(scope="module")
def spec_engine(smollm2_dir):
    """SmolLM2 with the committed drafter, so decode spans carry τ and verify events."""
    import asyncio

    from turnspec.engine.local import LocalEngine, LocalEngineConfig

    engine = LocalEngine(LocalEngineConfig(model_dir=str(smollm2_dir), max_batch=4,
                                           max_context=1024, block_size=BLOCK,
                                           kv_memory_gb=0.25, speculator="default",
                                           spec_policy="always"))
    yield engine
    asyncio.run(engine.shutdown())


@pytest.fixture(scope="module")
def traced(spec_engine):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    srv = start_server(spec_engine, default_max_tokens=24, tracer_provider=provider)
    yield srv, exporter
    srv.stop()


def _trace(exporter: InMemorySpanExporter, request_id: str) -> tuple[object, list]:
    """The root span of `request_id` and its children, as exported (the spans are built on the
    server's loop right after the terminal event, so they may land a moment after it)."""
    deadline = time.monotonic() + 10
    while True:
        spans = exporter.get_finished_spans()
        root = next((s for s in spans if s.attributes.get("turnspec.request_id") == request_id),
                    None)
        if root is not None or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert root is not None, f"no root span for {request_id}"
    kids = [s for s in spans if s.parent is not None
            and s.parent.span_id == root.context.span_id]
    return root, sorted(kids, key=lambda s: s.start_time)


def _check_tree(root, kids, timing: dict, usage_in: int, usage_out: int) -> dict:
    assert format(root.context.trace_id, "032x") == TRACE_ID == timing["trace_id"]
    assert format(root.parent.span_id, "016x") == CLIENT_SPAN and root.parent.is_remote
    names = [k.name for k in kids]
    for hop in HOPS:
        assert hop in names, names
    order = [n for n in names if n in HOPS]
    assert order == HOPS, order                            # the hops in the order they ran
    for k in kids:
        assert k.context.trace_id == root.context.trace_id
        assert root.start_time <= k.start_time <= k.end_time <= root.end_time, k.name
    a = root.attributes
    assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.request.model"]
    assert a["gen_ai.usage.input_tokens"] == usage_in
    assert a["gen_ai.usage.output_tokens"] == usage_out == timing["completion_tokens"]
    assert a["turnspec.server_e2e_ms"] == timing["server_e2e_ms"]
    root_ms = (root.end_time - root.start_time) / 1e6
    assert root_ms == pytest.approx(timing["server_e2e_ms"], abs=0.01)
    by_name = {k.name: k for k in kids}
    for name, key in (("turnspec.engine.prefill", "prefill_ms"),
                      ("turnspec.engine.decode", "decode_ms")):
        span = by_name[name]
        assert (span.end_time - span.start_time) / 1e6 == pytest.approx(timing[key], abs=0.01)
    return by_name


async def test_ws_turn_traced_under_the_upgrade_traceparent(traced):
    srv, exporter = traced
    ws = await ResponsesSocketClient(f"ws://127.0.0.1:{srv.port}/v1/responses",
                                     headers={"traceparent": TRACEPARENT}).connect()
    try:
        rec = await ws.create(SAY, max_output_tokens=24)
    finally:
        await ws.close()
    assert rec.ok, rec.error
    root, kids = _trace(exporter, rec.request_id)
    by_name = _check_tree(root, kids, rec.timing, rec.usage["input_tokens"],
                          rec.usage["output_tokens"])
    decode, spec = by_name["turnspec.engine.decode"], rec.turnspec["spec"]
    assert spec and decode.attributes["turnspec.spec.tau"] == spec["tau"]
    assert decode.attributes["turnspec.spec.verify_steps"] == spec["verify_steps"]
    steps = [e for e in decode.events if e.name == "verify"]
    assert len(steps) == spec["verify_steps"]
    assert sum(e.attributes["turnspec.spec.committed"] for e in steps) == spec["committed_tokens"]
    assert root.attributes["gen_ai.response.finish_reasons"] in (("stop",), ("length",))


async def test_per_turn_traceparent_wins_over_the_upgrade(traced):
    srv, exporter = traced
    other = "0af7651916cd43dd8448eb211c80319c"
    ws = await ResponsesSocketClient(f"ws://127.0.0.1:{srv.port}/v1/responses",
                                     headers={"traceparent": f"00-{other}-b7ad6b7169203331-01"}
                                     ).connect()
    try:
        rec = await ws.create(SAY, max_output_tokens=4, metadata={"traceparent": TRACEPARENT})
    finally:
        await ws.close()
    root, _ = _trace(exporter, rec.request_id)
    assert format(root.context.trace_id, "032x") == TRACE_ID


async def test_http_tool_call_turn_carries_the_tool_call_latency(traced):
    srv, exporter = traced
    chunks = []
    async with aiohttp.ClientSession() as s, s.post(
            f"http://127.0.0.1:{srv.port}/v1/chat/completions",
            headers={"traceparent": TRACEPARENT},
            json={"model": "x", "stream": True, "max_tokens": 64, "tool_choice": "required",
                  "tools": [WEATHER_TOOL],
                  "messages": [{"role": "user", "content": "Weather in Paris?"}]}) as r:
        async for raw in r.content:
            if raw.startswith(b"data: {"):
                chunks.append(json.loads(raw[6:]))
    block = next(c["turnspec"] for c in chunks if "timing" in c.get("turnspec", {}))
    root, kids = _trace(exporter, block["request_id"])
    t = block["timing"]
    by_name = _check_tree(root, kids, t, t["prompt_tokens"], t["completion_tokens"])
    call = by_name["turnspec.tool_call"]
    assert call.attributes["gen_ai.tool.name"] == "get_weather"
    assert call.attributes["turnspec.tool_call_ms"] == pytest.approx(t["tool_call_ms"], abs=0.01)
    assert root.attributes["turnspec.tool_call_ms"] == t["tool_call_ms"]
    assert "turnspec.grammar" in by_name
    assert root.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)


async def test_grpc_turn_traced_from_metadata(traced):
    srv, exporter = traced
    async with grpc.aio.insecure_channel(f"127.0.0.1:{srv.grpc_port}") as ch:
        req = pb.GenerateRequest(request_id="grpc-traced", messages=[
            pb.Message(role="user", content=SAY[0]["content"])])
        req.sampling.max_tokens = 12
        out = [r async for r in pb_grpc.GenerationStub(ch).Generate(
            req, metadata=(("traceparent", TRACEPARENT),))]
    t = out[-1].complete.timing
    timing = {f.name: getattr(t, f.name) for f in t.DESCRIPTOR.fields}
    root, kids = _trace(exporter, "grpc-traced")
    _check_tree(root, kids, timing, out[-1].usage.prompt_tokens,
                out[-1].usage.completion_tokens)
    assert root.attributes["turnspec.transport"] == "grpc"


async def test_a_refused_turn_ends_its_span_with_the_error(traced):
    srv, exporter = traced
    ws = await ResponsesSocketClient(f"ws://127.0.0.1:{srv.port}/v1/responses").connect()
    try:
        rec = await ws.create("hi", tools=[WEATHER_TOOL_FLAT],
                              metadata={"traceparent": TRACEPARENT},
                              tool_choice={"type": "function", "name": "book_flight"})
    finally:
        await ws.close()
    assert not rec.ok
    refused = [s for s in exporter.get_finished_spans()
               if s.attributes.get("error.type") and s.parent is not None
               and format(s.context.trace_id, "032x") == TRACE_ID]
    assert refused and refused[-1].status.status_code.name == "ERROR"


async def test_untraced_server_makes_no_span_and_metrics_count_n_requests(local_engine):
    srv = start_server(local_engine, default_max_tokens=6)
    try:
        before = scrape(srv.port)
        ws = await ResponsesSocketClient(f"ws://127.0.0.1:{srv.port}/v1/responses").connect()
        try:
            recs = [await ws.create(f"Say {w}.", max_output_tokens=6) for w in ("one", "two", "3")]
        finally:
            await ws.close()
        assert all(r.ok for r in recs) and "trace_id" not in recs[0].timing
        after = scrape(srv.port)
    finally:
        srv.stop()
    out = sum(r.usage["output_tokens"] for r in recs)

    def moved(key: str) -> float:
        return after.get(key, 0.0) - before.get(key, 0.0)
    # the GenAI conventions' attributes as labels, the served model as gen_ai_request_model
    gen_ai = ('{gen_ai_operation_name="chat",gen_ai_provider_name="turnspec",'
              f'gen_ai_request_model="{local_engine.model_name}",transport="ws"}}')
    assert moved(f"gen_ai_server_time_to_first_token_seconds_count{gen_ai}") == 3
    assert moved(f"gen_ai_server_request_duration_seconds_count{gen_ai}") == 3
    assert moved(f"gen_ai_server_time_per_output_token_seconds_count{gen_ai}") == 3
    assert moved("turnspec_completion_tokens_total") == out
    assert moved('turnspec_requests_total{outcome="length",transport="ws"}') \
        + moved('turnspec_requests_total{outcome="stop",transport="ws"}') == 3
    assert moved("turnspec_queue_time_seconds_count") == 3
    assert after["turnspec_engine_used_kv_blocks"] + after["turnspec_engine_free_kv_blocks"] \
        == after["turnspec_engine_total_kv_blocks"]
