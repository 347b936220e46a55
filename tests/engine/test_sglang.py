"""The SGLang backend's request translation (SGLang itself only runs on GPU machines)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from turnspec.engine.chat import ChatTemplate
from turnspec.engine.protocol import EngineError, GenerateRequest, SamplingParams
from turnspec.engine.sglang import SGLangConfig, SGLangEngine
from turnspec.tools_grammar.schema import parse_tool_choice, parse_tools

TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def test_engine_kwargs_and_sampling(smollm2_dir: Path) -> None:
    eng = SGLangEngine(SGLangConfig(model_dir=str(smollm2_dir), speculator="/drafters/x", spec_block_size=8))
    kw = eng.cfg.engine_kwargs()
    assert kw["speculative_algorithm"] == "DFLASH" and kw["speculative_num_draft_tokens"] == 8
    chat = ChatTemplate.from_model_dir(smollm2_dir)
    tools = parse_tools([TOOL])
    grammar = chat.grammar_compiler.matcher(tools, parse_tool_choice("required", tools), chat.tool_format)
    req = GenerateRequest("r", [1, 2, 3], SamplingParams(temperature=0.5, top_k=0, max_tokens=7, stop=("x",)),
                          grammar=grammar)
    params = eng._sampling(req)
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
