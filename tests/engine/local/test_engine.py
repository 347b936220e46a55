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
