"""The SGLang backend's request translation (SGLang itself only runs on GPU machines)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from turnspec.engine.chat import ChatTemplate
from turnspec.engine.drafter import DEFAULT_DRAFTER_DIR
from turnspec.engine.protocol import Delta, EngineError, GenerateRequest, SamplingParams, Timing
from turnspec.engine.sglang import (
    SGLangConfig,
    SGLangEngine,
    final_delta,
    sampling_params,
)
from turnspec.tools_grammar.schema import parse_tool_choice, parse_tools

TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def test_engine_kwargs_and_sampling(smollm2_dir: Path) -> None:
    drafter = str(DEFAULT_DRAFTER_DIR)
    eng = SGLangEngine(SGLangConfig(model_dir=str(smollm2_dir), speculator=drafter,
                                    spec_block_size=8, extra=(("cuda_graph_max_bs", 8),)))
    kw = eng.cfg.engine_kwargs()
    assert kw["speculative_algorithm"] == "DFLASH" and kw["speculative_num_draft_tokens"] == 8
    assert kw["speculative_draft_model_path"] == drafter and kw["cuda_graph_max_bs"] == 8
    assert kw["enable_metrics"] and kw["attention_backend"] == "triton"
    chat = ChatTemplate.from_model_dir(smollm2_dir)
    tools = parse_tools([TOOL])
    grammar = chat.grammar_compiler.matcher(tools, parse_tool_choice("required", tools), chat.tool_format)
    req = GenerateRequest("r", [1, 2, 3], SamplingParams(temperature=0.5, top_k=0, max_tokens=7, stop=("x",)),
                          grammar=grammar)
    params = sampling_params(req)
    assert params["top_k"] == -1 and params["max_new_tokens"] == 7 and params["stop"] == ["x"]
    tag = json.loads(params["structural_tag"])  # the same structural tag our matcher compiled
    assert "get_weather" in json.dumps(tag)


@pytest.mark.skipif(importlib.util.find_spec("sglang") is not None, reason="sglang installed")
async def test_start_without_sglang_is_a_clear_error(smollm2_dir: Path) -> None:
    eng = SGLangEngine(SGLangConfig(model_dir=str(smollm2_dir)))
    with pytest.raises(EngineError, match="needs the sglang package"):
        await eng.start()
    with pytest.raises(EngineError, match="not started"):
        eng.generate(GenerateRequest("r", [1]))


def test_bad_model_dir(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="expected a local HF model folder"):
        SGLangConfig(model_dir=str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="expected 'none' or a DFlash drafter folder"):
        SGLangConfig(model_dir=str(tmp_path), speculator=str(tmp_path / "nope"))


def test_meta_info_becomes_our_timing_and_spec_stats() -> None:
    """SGLang's meta_info (realtime seconds from its scheduler, as 0.5.17 reports them with
    enable_metrics) maps onto the engine's Timing and SpecStats."""
    meta = {"finish_reason": {"type": "length", "length": 32}, "prompt_tokens": 100,
            "cached_tokens": 64, "completion_tokens": 32, "queue_time": 0.002,
            "forward_entry_time": 1000.010, "prefill_finished_time": 1000.025,
            "request_finished_ts": 1000.125, "spec_verify_ct": 8,
            "spec_num_correct_drafts": 24, "spec_accept_length": 4.0}
    delta, timing = Delta("r", [1], "x"), Timing(prompt_tokens=100, accepted_at=5.0)
    final_delta(delta, meta, timing, t0=5.0, t_first=5.030, now=5.140)
    assert delta.finished and delta.finish_reason == "length"
    t = delta.timing
    assert t.queue_ms == pytest.approx(2.0) and t.prefill_ms == pytest.approx(15.0)
    assert t.decode_ms == pytest.approx(100.0) and t.first_token_ms == pytest.approx(30.0)
    assert (t.cached_tokens, t.prefill_tokens, t.completion_tokens) == (64, 36, 32)
    assert delta.spec.verify_steps == 8 and delta.spec.tau == 4.0
    assert delta.spec.accepted_tokens == 24
    aborted = Delta("r", [], "")
    final_delta(aborted, {"finish_reason": {"type": "abort"}}, Timing(), 0.0, None, 1.0)
    assert aborted.finish_reason == "abort" and aborted.spec is None
