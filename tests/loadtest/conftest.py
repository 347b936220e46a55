"""A real server (SmolLM2 on CPU) for the client tests, one per module."""

from __future__ import annotations

import pytest

from turnspec.server.config import ServerConfig
from turnspec.server.testing import ThreadedServer


@pytest.fixture(scope="module")
def real_server(smollm2_dir):
    from turnspec.engine.local import LocalEngine, LocalEngineConfig

    engine = LocalEngine(LocalEngineConfig(model_dir=str(smollm2_dir), max_batch=4,
                                           max_context=1024, kv_memory_gb=0.25))
    srv = ThreadedServer(engine, ServerConfig(port=0, grpc_port=0)).start()
    yield srv
    srv.stop()
