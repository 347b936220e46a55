"""FakeFixedRateEngine (engine/fake.py): the deliberately fake engine of `bench frontend`."""

from __future__ import annotations

import asyncio
import time

import pytest

from turnspec.engine.fake import FakeFixedRateEngine
from turnspec.engine.protocol import (
    ContextLengthError,
    Engine,
    EngineError,
    GenerateRequest,
    SamplingParams,
)


def _req(rid: str, max_tokens: int, prompt: int = 5) -> GenerateRequest:
    return GenerateRequest(rid, list(range(1, prompt + 1)), SamplingParams(max_tokens=max_tokens))


async def test_emits_on_a_fixed_schedule_then_finishes():
    eng = FakeFixedRateEngine(first_token_ms=5.0, interval_ms=2.0, tokens_per_request=4)
    assert isinstance(eng, Engine)
    t0 = time.perf_counter()
    arrivals, deltas = [], []
    async for d in eng.generate(_req("a", max_tokens=10)):
        arrivals.append((time.perf_counter() - t0) * 1000.0)
        deltas.append(d)
    assert [d.text for d in deltas[:-1]] == [" hi"] * 4
    final = deltas[-1]
    assert final.finished and final.finish_reason == "stop"
    assert final.timing.completion_tokens == 4 and final.timing.prompt_tokens == 5
    # never early: token i is ready at first_token + i * interval after acceptance
    for i, t in enumerate(arrivals[:4]):
        assert t >= 5.0 + 2.0 * i - 0.5
    assert eng.stats().active_sequences == 0


async def test_length_abort_and_errors():
    eng = FakeFixedRateEngine(first_token_ms=1.0, interval_ms=1.0, tokens_per_request=8,
                              max_context=32)
    deltas = [d async for d in eng.generate(_req("b", max_tokens=3))]
    assert deltas[-1].finish_reason == "length" and len(deltas) == 4

    with pytest.raises(ContextLengthError):
        eng.generate(_req("c", max_tokens=30, prompt=5))

    stream = eng.generate(_req("d", max_tokens=20))
    with pytest.raises(EngineError):
        eng.generate(_req("d", max_tokens=1))  # same id in flight
    assert eng.stats().active_sequences == 1
    first = await stream.__anext__()
    await eng.abort("d")
    rest = [d async for d in stream]
    assert first.text and rest[-1].finish_reason == "abort"
    assert eng.stats().active_sequences == 0


async def test_abort_wakes_a_sleeping_stream():
    eng = FakeFixedRateEngine(first_token_ms=60_000.0, interval_ms=1.0)
    stream = eng.generate(_req("e", max_tokens=5))
    nxt = asyncio.ensure_future(stream.__anext__())
    await asyncio.sleep(0.01)
    await eng.abort("e")
    final = await asyncio.wait_for(nxt, 10)
    assert final.finished and final.finish_reason == "abort"
    assert final.timing.completion_tokens == 0


async def test_abort_before_first_iteration_frees_the_request():
    eng = FakeFixedRateEngine(first_token_ms=1.0, interval_ms=1.0)
    stream = eng.generate(_req("f", max_tokens=5))
    assert eng.stats().active_sequences == 1
    await eng.abort("f")
    assert eng.stats().active_sequences == 0
    deltas = [d async for d in stream]
    assert len(deltas) == 1 and deltas[0].finish_reason == "abort"
