"""A fault inside one engine step fails only the requests of that step, each with an error
that names the fault; the others finish exactly as without it, every KV block comes back and
the engine keeps serving. Faults are injected through `EngineCore.fault_hook` (test-only)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from turnspec.engine.local import LocalEngine
from turnspec.engine.local.config import LocalEngineConfig
from turnspec.engine.local.core import EngineCore
from turnspec.engine.local.scheduler import ScheduledBatch
from turnspec.engine.protocol import Delta, GenerateRequest, SamplingParams

GREEDY = SamplingParams(temperature=0.0, max_tokens=8, ignore_eos=True)


class InjectedFault(RuntimeError):
    pass


def fault_when(kind: str, request_id: str, times: int = 1):
    """A hook that raises in the first `times` batches of `kind` holding `request_id`."""
    left = [times]

    def hook(batch: ScheduledBatch) -> None:
        if batch.kind == kind and left[0] > 0 and any(s.request_id == request_id
                                                      for s in batch.seqs):
            left[0] -= 1
            raise InjectedFault(f"injected into the {kind} of {request_id}")
    return hook


@pytest.fixture(scope="module")
def core(smollm2_dir: Path) -> EngineCore:
    return EngineCore(LocalEngineConfig(model_dir=str(smollm2_dir), max_batch=4,
                                        max_context=512, kv_memory_gb=0.05))


def prompt(core: EngineCore, text: str) -> list[int]:
    return list(core.tokenizer.apply_chat_template(
        [{"role": "user", "content": text}], add_generation_prompt=True, tokenize=True,
        return_dict=True)["input_ids"])


def run(core: EngineCore, steps: int = 200) -> dict[str, list[Delta]]:
    out: dict[str, list[Delta]] = {}
    for _ in range(steps):
        if not core.has_work():
            break
        for d in core.step():
            out.setdefault(d.request_id, []).append(d)
    assert not core.has_work()
    return out


def tokens(deltas: list[Delta]) -> list[int]:
    return [t for d in deltas for t in d.token_ids]


def assert_idle(core: EngineCore) -> None:
    assert not core.seqs and not core.scheduler.running and not core.scheduler.waiting
    assert core.blocks.num_free == core.blocks.num_blocks  # every KV block returned


def test_prefill_fault_fails_only_the_new_request(core: EngineCore) -> None:
    a, b = prompt(core, "Count to ten."), prompt(core, "Name a colour.")
    core.add(GenerateRequest("ref", a, GREEDY))
    want = tokens(run(core)["ref"])
    core.add(GenerateRequest("a", a, GREEDY))
    first = core.step()  # a is prefilled and decoding
    core.add(GenerateRequest("b", b, GREEDY))
    core.fault_hook = fault_when("prefill", "b")
    try:
        out = run(core)
    finally:
        core.fault_hook = None
    last_b = out["b"][-1]
    assert last_b.finished and last_b.finish_reason == "error"
    assert "InjectedFault" in last_b.error and "prefill" in last_b.error
    assert out["a"][-1].finish_reason == "length"
    assert tokens(first) + tokens(out["a"]) == want  # as if b had never come
    assert_idle(core)


def test_decode_fault_fails_the_batch_and_the_engine_keeps_serving(core: EngineCore) -> None:
    a, b = prompt(core, "Count to ten."), prompt(core, "Name a colour.")
    core.add(GenerateRequest("ref", a, GREEDY))
    want = tokens(run(core)["ref"])
    core.add(GenerateRequest("x", a, GREEDY))
    core.add(GenerateRequest("y", b, GREEDY))
    core.fault_hook = fault_when("decode", "x")
    try:
        out = run(core)
    finally:
        core.fault_hook = None
    for rid in ("x", "y"):  # both were in the failed decode step
        assert out[rid][-1].finish_reason == "error", out[rid][-1]
        assert "decode step failed: InjectedFault" in out[rid][-1].error
    assert_idle(core)
    core.add(GenerateRequest("after", a, GREEDY))  # the engine serves the next request
    assert tokens(run(core)["after"]) == want
    assert_idle(core)


async def test_local_engine_streams_the_error_and_serves_on(smollm2_dir: Path) -> None:
    engine = LocalEngine(LocalEngineConfig(model_dir=str(smollm2_dir), max_batch=4,
                                           max_context=512, kv_memory_gb=0.05))
    await engine.start()
    try:
        ids = prompt(engine.core, "Say hi.")
        engine.core.fault_hook = fault_when("prefill", "bad")
        bad = [d async for d in engine.generate(GenerateRequest("bad", ids, GREEDY))]
        assert bad[-1].finish_reason == "error" and "InjectedFault" in bad[-1].error
        good = [d async for d in engine.generate(GenerateRequest("good", ids, GREEDY))]
        assert good[-1].finish_reason == "length" and len(tokens(good)) == 8
        for _ in range(100):  # the final delta reaches the loop before the next step's stats
            if engine.stats().active_sequences == 0:
                break
            await asyncio.sleep(0.01)
        s = engine.stats()
        assert s.active_sequences == 0 and s.free_kv_blocks == s.total_kv_blocks
    finally:
        await engine.shutdown()
