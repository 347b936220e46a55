"""`turnspec loadtest` against a real server (SmolLM2 + its DFlash drafter on CPU) on all three
transports: the voice workload's multi-turn calls with tool results fed back; every metric the
issue names has values, and the JSON holds the contract."""

from __future__ import annotations

import json

import pytest

from turnspec.cli.main import main
from turnspec.server.config import ServerConfig
from turnspec.server.testing import ThreadedServer

pytestmark = pytest.mark.slow  # loads the model and drafter, ~3 x 8 s of turns on 2 cores

EVERY_METRIC = ("ttft_ms", "ttfs_ms", "tool_call_ms", "itl_ms", "tpot_ms", "e2e_ms",
                "output_tokens", "per_user_tok_s", "rtt_ms", "server_queue_ms",
                "server_prefill_ms", "server_decode_ms", "server_host_overhead_ms",
                "server_e2e_ms", "tau", "residual_ms", "uplink_ms", "downlink_ms")


@pytest.fixture(scope="module")
def spec_server(smollm2_dir):
    from turnspec.engine.local import LocalEngine, LocalEngineConfig

    engine = LocalEngine(LocalEngineConfig(model_dir=str(smollm2_dir), speculator="default",
                                           max_batch=4, max_context=2048, kv_memory_gb=0.5))
    srv = ThreadedServer(engine, ServerConfig(port=0, grpc_port=0)).start()
    yield srv
    srv.stop()


@pytest.mark.parametrize("transport", ["ws", "http", "grpc"])
def test_voice_turns_have_every_metric(spec_server, tmp_path, transport):
    url = {"ws": f"ws://127.0.0.1:{spec_server.port}/v1/responses",
           "http": f"http://127.0.0.1:{spec_server.port}/v1",
           "grpc": f"grpc://127.0.0.1:{spec_server.grpc_port}"}[transport]
    out = tmp_path / "r.json"
    code = main(["loadtest", "--url", url, "--concurrency", "2", "--requests", "6",
                 "--max-tokens", "64", "--out", str(out), "--history", "", "--no-progress",
                 "--slo", "ttft:5000,e2e:60000"])
    res = json.loads(out.read_text())
    assert code == 0, res["requests"]
    assert res["requests"] | {"ok": 6, "errors": 0} == res["requests"]
    m = res["metrics"]
    for key in EVERY_METRIC:
        assert m[key]["n"] > 0 and all(m[key][s] is not None
                                       for s in ("p50", "p90", "p99", "mean", "max")), key
    assert m["output_tokens"]["max"] <= 64 and m["tau"]["min"] >= 1.0
    for q in ("p50", "p90", "p99"):  # the rows add up to the client's E2E by construction
        row = res["breakdown"][q]
        parts = ("rtt_ms", "host_overhead_ms", "queue_ms", "prefill_ms", "decode_ms",
                 "residual_ms")
        assert sum(row[k] for k in parts) == pytest.approx(row["e2e_ms"])
    assert res["goodput"]["turns"] == 6 and res["target"]["loopback"]
    assert res["samples"]["tool_call_ms"] and res["samples"]["tau"]
