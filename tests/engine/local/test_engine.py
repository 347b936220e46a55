"""`LocalEngine.generate_batch` (datagen's path) on the real SmolLM2: completions in order, and
the prefix-cache counts it reports."""

from __future__ import annotations

from pathlib import Path

from turnspec.engine.local import LocalEngine
from turnspec.engine.local.config import LocalEngineConfig
from turnspec.engine.protocol import SamplingParams


def test_generate_batch_counts_prompt_and_cached_tokens(smollm2_dir: Path) -> None:
    engine = LocalEngine(LocalEngineConfig(model_dir=str(smollm2_dir), max_batch=8))
    engine.load()
    chat = engine.chat
    system = "You are a phone agent for a dental clinic. " * 8           # several KV blocks
    call = [{"role": "system", "content": system},
            {"role": "user", "content": "Hi, can I book a cleaning?"}]
    first = chat.render(call)
    # the next turn of the same call: the first prompt is its prefix (up to the boundary block)
    second = chat.render(call + [{"role": "assistant", "content": "Sure, which day suits you?"},
                                 {"role": "user", "content": "Friday morning."}])
    other = chat.render([{"role": "user", "content": "Name a primary colour."}])
    greedy = SamplingParams(temperature=0.0, max_tokens=4)
    counts: dict[str, int] = {}
    out = engine.generate_batch([first], greedy, counts=counts)
    assert len(out) == 1 and counts == {"prompt_tokens": len(first), "cached_prompt_tokens": 0}
    out = engine.generate_batch([second, other], greedy, counts=counts)
    assert len(out) == 2 and all(1 <= len(c) <= 4 for c in out)
    assert counts["prompt_tokens"] == len(first) + len(second) + len(other)
    shared = next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b) \
        if second[: len(first)] != first else len(first)
    full_blocks = shared // 16 * 16                                       # engine block size 16
    assert full_blocks >= 64 and counts["cached_prompt_tokens"] >= full_blocks
    assert counts["cached_prompt_tokens"] < len(second)                   # the new turn was prefilled


def test_generate_stream_pulls_lazily_and_matches_batch(smollm2_dir: Path) -> None:
    engine = LocalEngine(LocalEngineConfig(model_dir=str(smollm2_dir), max_batch=2,
                                           admit_min_free=2))
    engine.load()
    chat = engine.chat
    prompts = [chat.render([{"role": "user", "content": q}]) for q in
               ("Name a primary colour.", "Say hi.", "Count to three.", "What is 2+2?", "Bye.")]
    greedy = SamplingParams(temperature=0.0, max_tokens=6)
    want = engine.generate_batch(prompts, greedy)
    pulled: list[int] = []

    def source():
        for i, p in enumerate(prompts):
            pulled.append(i)
            yield p
    got: dict[int, list[int]] = {}
    for i, tokens in engine.generate_stream(source(), greedy, ahead=1):
        assert len(pulled) <= 2 + 1 + len(got)            # max_batch + ahead, refilled per finish
        got[i] = tokens
    assert got == dict(enumerate(want))
    # closing the stream early aborts what is in flight and frees its KV
    stream = engine.generate_stream(prompts, greedy, ahead=1)
    next(stream)
    stream.close()
    stats = engine.stats()
    assert not engine.core.seqs and stats.active_sequences == stats.waiting_sequences == 0
    assert stats.free_kv_blocks == stats.total_kv_blocks


async def _until(check, what: str) -> None:
    import asyncio

    for _ in range(200):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _idle(engine: LocalEngine) -> bool:
    stats = engine.stats()
    return not engine.core.seqs and stats.free_kv_blocks == stats.total_kv_blocks


async def test_closing_a_stream_aborts_once_even_unstarted_or_after_an_abort(smollm2_dir: Path):
    """The DeltaStream contract: closing before the final delta aborts the request (also when
    it was never iterated), and `abort` then close reach the core as one abort."""
    from turnspec.engine.protocol import GenerateRequest

    engine = LocalEngine(LocalEngineConfig(model_dir=str(smollm2_dir), max_batch=4))
    await engine.start()
    aborts: list[str] = []
    core_abort = engine.core.abort
    engine.core.abort = lambda rid: (aborts.append(rid), core_abort(rid))[1]  # count, then do it
    prompt = engine.chat.render([{"role": "user", "content": "Tell me a long story."}])
    long = SamplingParams(temperature=0.0, max_tokens=200, ignore_eos=True)
    try:
        never_read = engine.generate(GenerateRequest("unstarted", prompt, long))
        await never_read.aclose()
        await _until(lambda: aborts and _idle(engine), "the unstarted request's abort")
        assert aborts == ["unstarted"]

        stream = engine.generate(GenerateRequest("barge-in", prompt, long))
        first = await stream.__anext__()
        await engine.abort("barge-in")                         # barge-in ...
        await engine.abort("barge-in")                         # ... twice ...
        await stream.aclose()                                  # ... then the client leaves
        await _until(lambda: _idle(engine), "the barged-in request to end")
        assert aborts == ["unstarted", "barge-in"] and not first.finished

        done = [d async for d in engine.generate(GenerateRequest("whole", prompt,
                                                                 SamplingParams(max_tokens=3)))]
        assert done[-1].finished and aborts == ["unstarted", "barge-in"]  # finished: no abort
    finally:
        await engine.shutdown()
