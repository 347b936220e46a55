"""The loop guard in the engine on the real SmolLM2: a looping greedy output is cut at exactly
the token where the guard detects the loop (finish "stop", stop_reason "loop_guard"), the same
with speculation (a verify step that commits past that token is trimmed and its tail uncounted),
and an output that does not loop is token-identical with the guard on."""

from __future__ import annotations

from pathlib import Path

import pytest

from turnspec.engine.local.config import LocalEngineConfig
from turnspec.engine.local.core import EngineCore
from turnspec.engine.loop_guard import LOOP_GUARD_STOP, LoopGuard, first_loop
from turnspec.engine.protocol import GenerateRequest, SamplingParams

# Greedy SmolLM2 repeats one sentence here until max_tokens ("The song is a classic example
# of a duet, ..."); the default guard fires on its third copy, ~65 tokens in.
LOOPING = "Write a song chorus that repeats three times."
ENDS = "What is the capital of France?"
MAX = 96


@pytest.fixture(scope="module")
def core(smollm2_dir: Path) -> EngineCore:
    return EngineCore(LocalEngineConfig(model_dir=str(smollm2_dir), speculator="default"))


def _prompt(core: EngineCore, text: str) -> list[int]:
    return list(core.tokenizer.apply_chat_template(
        [{"role": "user", "content": text}], add_generation_prompt=True, tokenize=True,
        return_dict=True)["input_ids"])


def _run(core: EngineCore, prompt: list[int], guard: LoopGuard | None, block: int | None):
    rid = f"r{len(core.seqs)}-{id(prompt)}-{guard}-{block}"
    core.add(GenerateRequest(rid, prompt, SamplingParams(max_tokens=MAX, loop_guard=guard),
                             spec_block_size=block))
    tokens, final = [], None
    while core.has_work():
        for d in core.step():
            tokens += d.token_ids
            final = d if d.finished else final
    return tokens, final


def test_a_loop_ends_at_the_detecting_token_with_and_without_speculation(core) -> None:
    prompt = _prompt(core, LOOPING)
    free, final = _run(core, prompt, None, 0)
    assert final.finish_reason == "length" and len(free) == MAX
    cut = first_loop(free, LoopGuard())
    assert cut is not None and cut < MAX
    for block in (0, None):  # plain decoding, then the default drafter's block
        tokens, final = _run(core, prompt, LoopGuard(), block)
        assert tokens == free[:cut], block
        assert (final.finish_reason, final.stop_reason) == ("stop", LOOP_GUARD_STOP)
        assert final.timing.completion_tokens == cut
        if final.spec is not None:  # verify steps count only the tokens the request emitted
            assert sum(final.spec.step_lengths) == final.spec.committed_tokens <= cut


def test_output_that_does_not_loop_is_unchanged(core) -> None:
    prompt = _prompt(core, ENDS)
    free, final = _run(core, prompt, None, 0)
    assert final.finish_reason == "stop"
    guarded, final = _run(core, prompt, LoopGuard(), None)
    assert guarded == free and final.stop_reason is None
