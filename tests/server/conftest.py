"""Server test fixtures: one real SmolLM2 engine for the whole session, shared by per-module
servers (each with its own config; see srv_helpers.start_server)."""

from __future__ import annotations

import asyncio

import pytest

from .srv_helpers import BLOCK


@pytest.fixture(scope="session")
def local_engine(smollm2_dir):
    from turnspec.engine.local import LocalEngine, LocalEngineConfig

    engine = LocalEngine(LocalEngineConfig(model_dir=str(smollm2_dir), max_batch=8,
                                           max_context=1024, block_size=BLOCK,
                                           kv_memory_gb=0.25))
    yield engine
    asyncio.run(engine.shutdown())

