"""Servers for the load-test tests: a real one (SmolLM2 on CPU) for the client tests, one per
module, and `turnspec serve --engine fake-fixed-rate` as a real process for known answers."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass

import pytest

from turnspec.server.config import ServerConfig
from turnspec.server.testing import ThreadedServer

# Known answers: large enough that 5% (10 ms, 2.5 ms) is well above loopback scheduling noise
# on a loaded 2-core host, where a 20 ms / 10 ms schedule's 1 ms / 0.5 ms bounds are not.
FAKE_FIRST_TOKEN_MS = 200.0
FAKE_INTERVAL_MS = 50.0
FAKE_TOKENS = 16
FAKE_MAX_CONTEXT = 512


@pytest.fixture(scope="module")
def real_server(smollm2_dir):
    from turnspec.engine.local import LocalEngine, LocalEngineConfig

    engine = LocalEngine(LocalEngineConfig(model_dir=str(smollm2_dir), max_batch=4,
                                           max_context=1024, kv_memory_gb=0.25))
    srv = ThreadedServer(engine, ServerConfig(port=0, grpc_port=0)).start()
    yield srv
    srv.stop()


@dataclass(slots=True, frozen=True)
class FakeServe:
    port: int
    grpc_port: int

    def url(self, transport: str) -> str:
        return {"http": f"http://127.0.0.1:{self.port}/v1",
                "ws": f"ws://127.0.0.1:{self.port}/v1/responses",
                "grpc": f"grpc://127.0.0.1:{self.grpc_port}"}[transport]


@pytest.fixture(scope="module")
def fake_serve(smollm2_dir):
    """`turnspec serve --engine fake-fixed-rate` in its own process (as an operator runs it)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "turnspec.cli.main", "--log-level", "warning", "serve",
         "--engine", "fake-fixed-rate", "--model", str(smollm2_dir), "--port", "0",
         "--grpc-port", "0", "--max-context", str(FAKE_MAX_CONTEXT),
         "--fake-first-token-ms", str(FAKE_FIRST_TOKEN_MS),
         "--fake-interval-ms", str(FAKE_INTERVAL_MS), "--fake-tokens", str(FAKE_TOKENS)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    seen, ports = [], None
    for line in proc.stdout:
        seen.append(line)
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+) .* gRPC 127\.0\.0\.1:(\d+)", line)
        if m:
            ports = int(m[1]), int(m[2])
        if "turnspec: ready" in line:
            break
    if ports is None or proc.poll() is not None:
        proc.kill()
        raise AssertionError("fake serve did not start:\n" + "".join(seen))
    yield FakeServe(*ports)
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
