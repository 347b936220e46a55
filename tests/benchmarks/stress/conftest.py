"""One real SmolLM2 engine for the stress tests (KV blocks and aborts are the point)."""

from __future__ import annotations

import asyncio

import pytest


@pytest.fixture(scope="package")  # freed when the stress tests end (~2 GB)
def stress_engine(smollm2_dir):
    from turnspec.engine.local import LocalEngine, LocalEngineConfig

    engine = LocalEngine(LocalEngineConfig(model_dir=str(smollm2_dir), max_batch=8,
                                           max_context=1024, block_size=16,
                                           kv_memory_gb=0.25))
    yield engine
    asyncio.run(engine.shutdown())
