"""The API key never leaves the auth check: after requests with the right key and with wrong
ones (one of them the key plus a suffix, as a typo would be) on every transport, the key
appears in none of the captured log output, the exported spans, /metrics, or the error
bodies the clients got. The comparison itself is hmac.compare_digest (server/hub.py)."""

from __future__ import annotations

import logging
import urllib.request

import aiohttp
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from turnspec.loadtest.clients import GenerationClient, ResponsesSocketClient

from .srv_helpers import assert_serves_normally, start_server

SECRET = "sk-live-7f3a9c1e5b2d4086"
HI = [{"role": "user", "content": "hi"}]


async def test_the_key_is_in_no_log_span_metric_or_error(local_engine, caplog):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    caplog.set_level(logging.DEBUG)  # every logger, every level
    srv = start_server(local_engine, api_key=SECRET, tracer_provider=provider)
    answers: list[str] = []
    try:
        base = f"127.0.0.1:{srv.port}"
        async with aiohttp.ClientSession() as s:
            for key in (SECRET, "wrong", SECRET + "x", "x" + SECRET):
                for scheme in ("Bearer", "Basic"):
                    async with s.post(f"http://{base}/v1/chat/completions",
                                      json={"messages": HI, "max_tokens": 2},
                                      headers={"Authorization": f"{scheme} {key}",
                                               "traceparent": "00-" + "ab" * 16 + "-"
                                               + "cd" * 8 + "-01"}) as r:
                        answers.append(await r.text())
        for key in (SECRET, SECRET + "x"):
            g = GenerationClient(f"127.0.0.1:{srv.grpc_port}", api_key=key)
            rec = await g.generate(HI, max_tokens=2)
            answers.append(repr(rec.error))
            await g.close()
            try:
                ws = await ResponsesSocketClient(f"ws://{base}/v1/responses",
                                                 api_key=key).connect()
            except aiohttp.WSServerHandshakeError as e:  # its repr holds our own headers
                answers.append(f"{e.status} {e.message}")
            else:
                rec = await ws.create("hi", max_output_tokens=2)
                answers.append(repr(rec.error))
                await ws.close()
        await assert_serves_normally(srv.port, api_key=SECRET)
        with urllib.request.urlopen(f"http://{base}/metrics", timeout=10) as r:
            metrics = r.read().decode()
    finally:
        srv.stop()
    provider.force_flush()
    spans = exporter.get_finished_spans()
    assert len(spans) > 10  # the turns were traced
    span_text = "\n".join(s.to_json() for s in spans)
    assert "turnspec_rejections" in metrics and "invalid_api_key" in metrics
    assert "incorrect API key" in caplog.text  # the refusals were logged ...
    for where, text in (("logs", caplog.text), ("spans", span_text), ("metrics", metrics),
                        ("answers", "\n".join(answers))):
        assert SECRET not in text, f"the API key leaked into the {where}"  # ... never the key
        assert SECRET[3:] not in text, f"part of the API key leaked into the {where}"
