"""`datagen --engine sglang` without SGLang: its sampling params, and SGLang's batch results
turned into the completions (and so the records) the local engine writes for the same tokens.
SGLang itself runs on the H200 only: scripts/gpu/datagen_sglang.sh."""

from __future__ import annotations

from pathlib import Path

import pytest

from turnspec.engine.chat import ChatTemplate
from turnspec.engine.local import LocalEngine
from turnspec.engine.local.config import LocalEngineConfig
from turnspec.engine.protocol import SamplingParams
from turnspec.speculator.data import read_samples
from turnspec.speculator.datagen import PromptItem, generate_dataset
from turnspec.speculator.datagen_sglang import completion, greedy_params, in_chunks

EOS = 2  # SmolLM2's <|im_end|>: config.json's eos_token_id and the tokenizer's


def _result(ids: list[int], kind: str, **meta) -> dict:
    """A result of sglang.Engine.generate as tokenizer_manager builds it (non-stream)."""
    fin = {"type": "stop", "matched": ids[-1]} if kind == "stop" \
        else {"type": kind, "length": len(ids)}
    return {"text": "", "output_ids": ids,
            "meta_info": {"finish_reason": fin, "completion_tokens": len(ids), **meta}}


def test_greedy_params(smollm2_dir):
    stops = ChatTemplate.from_model_dir(smollm2_dir).stop_token_ids
    p = greedy_params(160, stops)
    assert p == {"temperature": 0.0, "max_new_tokens": 160, "stop_token_ids": [EOS],
                 "ignore_eos": False, "repetition_penalty": 1.0, "frequency_penalty": 0.0,
                 "presence_penalty": 0.0, "min_new_tokens": 0}
    with pytest.raises(ValueError, match="max_new_tokens: expected an integer >= 1, got 0"):
        greedy_params(0, stops)
    with pytest.raises(ValueError, match="expected the model's EOS ids"):
        greedy_params(8, [])


def test_completion_keeps_the_stop_token_as_the_local_engine_does(smollm2_tokenizer):
    yes = smollm2_tokenizer.encode("Yes, Friday at ten works.")
    counts = {"prompt_tokens": 0, "cached_prompt_tokens": 0}
    # stopped on EOS: the EOS is the completion's last token (loss on it, as the local engine)
    r = _result(yes + [EOS], "stop", prompt_tokens=900, cached_tokens=640)
    assert completion(r, 160, {EOS}, counts) == yes + [EOS]
    assert counts == {"prompt_tokens": 900, "cached_prompt_tokens": 640}
    # out of budget: no EOS to keep
    assert completion(_result(yes, "length"), len(yes), {EOS}) == yes
    # EOS as the budget's last token: SGLang checks the length first and says "length", the
    # local engine says "stop"; the tokens are the same
    assert completion(_result(yes + [EOS], "length"), len(yes) + 1, {EOS}) == yes + [EOS]
    # ids past the first EOS (a speculative step's overshoot) or past the budget are cut
    assert completion(_result(yes + [EOS, 17, 18], "stop"), 160, {EOS}) == yes + [EOS]
    assert completion(_result(yes, "length"), 3, {EOS}) == yes[:3]


def test_completion_refuses_what_the_local_engine_would_not_write(smollm2_tokenizer):
    yes = smollm2_tokenizer.encode("Yes.")
    with pytest.raises(ValueError, match=r"finished a prompt with \{'type': 'abort'"):
        completion({"output_ids": [], "meta_info": {"finish_reason": {
            "type": "abort", "message": "prompt too long"}}}, 8, {EOS})
    with pytest.raises(ValueError, match="finished a prompt with None"):
        completion({"output_ids": yes, "meta_info": {}}, 8, {EOS})
    # a stop on a token the local engine goes on past (SGLang's extra stop ids)
    endoftext = smollm2_tokenizer.convert_tokens_to_ids("<|endoftext|>")
    with pytest.raises(ValueError, match=rf"stopped on {endoftext}, which the local engine does "
                                         rf"not stop on \(its stop ids: \[{EOS}\]\)"):
        completion(_result(yes + [endoftext], "stop"), 8, {EOS})
    # only the last id came back (a stream's shape): not every generated id
    short = {"output_ids": [EOS], "meta_info": {"finish_reason": {"type": "stop"},
                                                "completion_tokens": 3}}
    with pytest.raises(ValueError, match=r"1 output_ids for completion_tokens=3"):
        completion(short, 8, {EOS})


def test_sglang_results_of_the_local_tokens_write_the_local_records(smollm2_dir, tmp_path: Path):
    """The local engine answers three prompts (one stops on EOS, two run out of budget); the
    same tokens as SGLang results, through `completion`, write samples.jsonl byte for byte."""
    engine = LocalEngine(LocalEngineConfig(model_dir=str(smollm2_dir), max_batch=4,
                                           kv_memory_gb=0.5))
    engine.load()
    chat = engine.chat
    items = [PromptItem(f"c{i}:0", "train", "generic", tuple(chat.render(
        [{"role": "user", "content": text}]))) for i, text in enumerate((
            "Reply with one word: yes or no?", "Name a primary colour.",
            "Count from one to fifty in words."))]
    greedy = SamplingParams(temperature=0.0, max_tokens=16)
    local: dict[tuple[int, ...], list[int]] = {}

    def answer_local(prompts: list[list[int]]) -> list[list[int]]:
        out = engine.generate_batch(prompts, greedy)
        local.update((tuple(p), c) for p, c in zip(prompts, out, strict=True))
        return out

    def answer_sglang(prompts: list[list[int]]) -> list[list[int]]:
        results = [_result(c, "stop" if c[-1] == EOS else "length")
                   for c in (local[tuple(p)] for p in prompts)]
        return [completion(r, 16, set(chat.stop_token_ids)) for r in results]

    generate_dataset(items, answer_local, tmp_path / "local", progress=False)
    generate_dataset(items, answer_sglang, tmp_path / "sglang", progress=False)
    assert sum(c[-1] == EOS for c in local.values()) == 1          # "Yes." + EOS
    a, b = ((tmp_path / d / "samples.jsonl").read_bytes() for d in ("local", "sglang"))
    assert a == b and a.count(b"\n") == 3


def test_in_chunks_feeds_one_stream_in_calls_of_batch_size(tmp_path: Path):
    calls: list[int] = []

    def answer(prompts: list[list[int]]) -> list[list[int]]:
        calls.append(len(prompts))
        return [[p[-1] + 1, EOS] for p in prompts]

    got = list(in_chunks(answer, ([i] for i in range(7)), 3))
    assert calls == [3, 3, 1] and got == [(i, [i + 1, EOS]) for i in range(7)]
    # through generate_dataset: the plan's batches (one per source/split) back to back, in
    # calls of batch_size across them, every prompt written once
    items = [PromptItem(f"q{i}:0", "train" if i % 3 else "heldout", "tools" if i % 2 else "generic",
                        (10, 11 + i)) for i in range(10)]
    calls.clear()
    stats = generate_dataset(items, None, tmp_path, batch_size=4, progress=False,
                             stream=lambda ps: in_chunks(answer, ps, 4))
    assert stats["written"] == 10 and calls == [4, 4, 2]
    assert sorted(s.id for s in read_samples(tmp_path)) == sorted(it.id for it in items)
    with pytest.raises(ValueError, match="answer returned 1 completions for 2 prompts"):
        list(in_chunks(lambda ps: [[EOS]], ([i] for i in range(2)), 2))
    with pytest.raises(ValueError, match="size: expected >= 1, got 0"):
        list(in_chunks(answer, [], 0))
