"""Helpers for server tests: servers on a background loop, /metrics scraping, shared tools."""

from __future__ import annotations

import time
import urllib.request

from turnspec.server.config import ServerConfig
from turnspec.server.testing import ThreadedServer

BLOCK = 16  # the KV block size of the session engine (`local_engine`, tests/conftest.py)
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}
WEATHER_TOOL_FLAT = {"type": "function", **WEATHER_TOOL["function"]}  # Responses form


def start_server(engine, tracer_provider=None, **config) -> ThreadedServer:
    cfg = {"host": "127.0.0.1", "port": 0, "grpc_port": 0, "default_max_tokens": 16, **config}
    return ThreadedServer(engine, ServerConfig(**cfg), stop_engine=False,
                          tracer_provider=tracer_provider).start()


def scrape(port: int) -> dict[str, float]:
    """GET /metrics, parsed by prometheus_client -> {'name{a="x",b="y"}': value}, labels in
    name order."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
            out[s.name + (f"{{{labels}}}" if labels else "")] = s.value
    return out


def wait_engine_idle(port: int, timeout: float = 30.0) -> dict[str, float]:
    """Poll /metrics until the engine has no active sequence (barge-in freed its KV)."""
    deadline = time.monotonic() + timeout
    while True:
        m = scrape(port)
        if m["turnspec_engine_active_sequences"] == 0 or time.monotonic() > deadline:
            return m
        time.sleep(0.05)


async def assert_serves_normally(port: int, *, api_key: str | None = None,
                                 fake: bool = False) -> None:
    """What every hostile test ends with: the engine holds no sequence and no KV block, and a
    normal turn is answered correctly (the real model's greedy answer names Paris; the fake
    engine says ' hi'), after which the engine is idle again."""
    from turnspec.loadtest.clients import ResponsesSocketClient

    for _ in range(2):
        m = wait_engine_idle(port)
        assert m["turnspec_engine_active_sequences"] == 0, m
        assert m["turnspec_engine_waiting_sequences"] == 0, m
        assert m.get("turnspec_engine_used_kv_blocks", 0) == 0, m
        if _ == 1:
            return
        ws = await ResponsesSocketClient(f"ws://127.0.0.1:{port}/v1/responses",
                                         api_key=api_key).connect()
        try:
            rec = await ws.create("What is the capital of France? Answer in one word.",
                                  max_output_tokens=8)
        finally:
            await ws.close()
        assert rec.ok, rec.error
        assert (" hi" in rec.text) if fake else ("Paris" in rec.text), rec.text
