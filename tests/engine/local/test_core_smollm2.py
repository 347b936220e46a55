"""The local engine on the real SmolLM2: exact greedy vs transformers, batching and KV reuse
never change greedy output, abort frees KV within one step, bad input fails clearly."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from turnspec.engine.local.config import LocalEngineConfig
from turnspec.engine.local.core import EngineCore
from turnspec.engine.protocol import (
    ContextLengthError,
    EngineError,
    GenerateRequest,
    SamplingParams,
)

PROMPTS = [
    "What is the capital of France?",
    "Give me three tips for sleeping better.",
    "Book a table for two at seven thirty tonight, please.",
    "Um, what's the weather like in Paris tomorrow?",
    "Translate 'good morning' into Spanish.",
    "My card got declined, can you help?",
    "Write a haiku about the sea.",
    "How many legs does a spider have?",
    "uh actually make that four people, not two",
    "Summarize: the meeting moved to Thursday at 3pm in room B.",
]
MAX_NEW = 20


@pytest.fixture(scope="module")
def core(smollm2_dir: Path) -> EngineCore:
    return EngineCore(LocalEngineConfig(model_dir=str(smollm2_dir), max_batch=16))


def chat_ids(core: EngineCore, text: str, system: str | None = None) -> list[int]:
    msgs = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": text}]
    return list(core.tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True,
                                                   return_dict=True)["input_ids"])


def drain(core: EngineCore) -> dict:
    """request id -> (token ids, streamed text, final delta)."""
    out: dict[str, list[int]] = {}
    texts: dict[str, str] = {}
    finals = {}
    while core.has_work():
        for d in core.step():
            out.setdefault(d.request_id, []).extend(d.token_ids)
            texts[d.request_id] = texts.get(d.request_id, "") + d.text
            if d.finished:
                finals[d.request_id] = d
    return {k: (out[k], texts[k], finals[k]) for k in out}


def generate(core: EngineCore, prompts: list[list[int]], max_tokens: int = MAX_NEW) -> list[list[int]]:
    for i, p in enumerate(prompts):
        core.add(GenerateRequest(f"g{i}-{id(prompts)}", p, SamplingParams(max_tokens=max_tokens)))
    res = drain(core)
    return [res[f"g{i}-{id(prompts)}"][0] for i in range(len(prompts))]


def test_greedy_matches_transformers(core: EngineCore, smollm2_dir: Path) -> None:
    from transformers import AutoModelForCausalLM

    hf = AutoModelForCausalLM.from_pretrained(smollm2_dir, dtype=torch.float32).eval()
    ids = [chat_ids(core, p) for p in PROMPTS]
    ours = generate(core, ids)
    for p, o in zip(ids, ours, strict=True):
        ref = hf.generate(torch.tensor([p]), max_new_tokens=MAX_NEW, do_sample=False)[0, len(p):].tolist()
        assert o == ref


def test_every_cpu_gemm_backend_gives_the_same_greedy(core: EngineCore) -> None:
    """The measured plan picks a backend per row count (cpu_gemm_plan.py); each one alone gives
    the same greedy tokens, at decode (1 row) and in a batch of 3."""
    from turnspec.engine.model.cpu_gemm_plan import BACKENDS, GemmPlan
    from turnspec.engine.model.cpu_linear import gemm_plan, use_gemm_plan

    measured = gemm_plan(core.model)
    assert measured is not None and measured.source == "measured"   # cpu_gemm="auto"
    ids = [chat_ids(core, p) for p in PROMPTS[:3]]
    want = [generate(core, [p])[0] for p in ids]
    try:
        for backend in BACKENDS:
            use_gemm_plan(core.model, GemmPlan.fixed(backend))
            assert gemm_plan(core.model) == GemmPlan.fixed(backend)
            core.blocks.clear()
            assert generate(core, ids) == want, backend
    finally:
        use_gemm_plan(core.model, measured)
        core.blocks.clear()


def test_batching_and_kv_reuse_do_not_change_greedy(core: EngineCore) -> None:
    system = "You are a concise voice assistant for a restaurant. " * 12
    ids = [chat_ids(core, p, system) for p in PROMPTS[:4]]
    alone = [generate(core, [p])[0] for p in ids]  # one at a time (later ones hit the cache)
    core.blocks.clear()  # cold cache
    batched = generate(core, ids)  # all together, shared system prompt cached mid-batch
    assert batched == alone
    # continuation: turn 2 extends turn 1's prompt + reply, served from the prefix cache
    turn2 = ids[0] + alone[0] + core.tokenizer.encode("\n<|im_start|>user\nAnd for dessert?<|im_end|>\n<|im_start|>assistant\n", add_special_tokens=False)
    core.add(GenerateRequest("t2-cached", turn2, SamplingParams(max_tokens=MAX_NEW)))
    cached_out, _, cached_final = drain(core)["t2-cached"]
    assert cached_final.timing.cached_tokens >= len(ids[0]) + len(alone[0]) - 2 * core.blocks.block_size
    assert cached_final.timing.prefill_tokens == len(turn2) - cached_final.timing.cached_tokens
    core.blocks.clear()
    assert generate(core, [turn2])[0] == cached_out


def test_abort_frees_kv_within_one_step(core: EngineCore) -> None:
    core.blocks.clear()
    ids = [chat_ids(core, p) for p in PROMPTS[:5]]
    for i, p in enumerate(ids):
        core.add(GenerateRequest(f"ab{i}", p, SamplingParams(max_tokens=200)))
    core.step()  # prefill all five
    core.step()  # one decode step: all in flight
    assert core.stats().active_sequences == 5
    for i in range(5):
        core.abort(f"ab{i}")
    deltas = core.step()
    assert sorted(d.request_id for d in deltas if d.finished) == [f"ab{i}" for i in range(5)]
    assert all(d.finish_reason == "abort" for d in deltas)
    st = core.stats()
    assert st.active_sequences == 0 and st.waiting_sequences == 0
    assert st.free_kv_blocks == st.total_kv_blocks
    assert not core.has_work()


def test_bad_input_is_a_clear_error(core: EngineCore, tmp_path: Path) -> None:
    with pytest.raises(ContextLengthError, match="context is"):
        core.add(GenerateRequest("long", [5] * (core.max_context + 1)))
    with pytest.raises(EngineError, match="outside"):
        core.add(GenerateRequest("vocab", [10**7]))
    with pytest.raises(ValueError, match="temperature"):
        SamplingParams(temperature=-1)
    with pytest.raises(ValueError, match="top_p"):
        SamplingParams(top_p=0)
    with pytest.raises(ValueError, match="max_tokens"):
        SamplingParams(max_tokens=0)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        EngineCore(LocalEngineConfig(model_dir=str(tmp_path / "missing")))
    assert not core.has_work()


def test_stop_strings_and_seeded_sampling(core: EngineCore) -> None:
    # greedy output here is "The numbers one, two, three, four, five are a classic ..."
    ids = chat_ids(core, "List the numbers one, two, three, four, five as words.")
    core.add(GenerateRequest("stop", ids, SamplingParams(max_tokens=40, stop=(" four",))))
    core.add(GenerateRequest("nostop", ids, SamplingParams(max_tokens=40)))
    res = drain(core)
    full = res["nostop"][1]
    assert " four" in full
    assert res["stop"][2].finish_reason == "stop"
    assert res["stop"][1] == full[: full.index(" four")]  # streamed text ends before the stop
    s = SamplingParams(temperature=0.8, top_p=0.9, top_k=50, seed=1234, max_tokens=16)
    core.add(GenerateRequest("s1", ids, s))
    a = drain(core)["s1"][0]
    core.add(GenerateRequest("s2", ids, s))
    core.add(GenerateRequest("other", chat_ids(core, PROMPTS[1]), SamplingParams(temperature=1.0, max_tokens=16)))
    b = drain(core)["s2"][0]
    assert a == b  # same seed, same stream, whatever else is batched
