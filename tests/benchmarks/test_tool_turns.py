"""Grammar-constrained tool calls on the real SmolLM2, through the engine: required mode
always yields valid calls, auto mode never a broken one, and speculation (the committed
DFlash drafter) leaves greedy constrained output token-identical."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from turnspec.benchmarks.tool_calls import score_output, select_turns
from turnspec.benchmarks.tool_turns import run_turns
from turnspec.engine.chat import ChatTemplate
from turnspec.engine.local.config import LocalEngineConfig
from turnspec.engine.local.core import EngineCore

# SmolLM2 often fills free strings up to the grammar's 64-character cap ("7692456899..."), one
# token per digit: a 4-argument call can need ~300 tokens, so required-mode turns get room.
MAX_CALL_TOKENS = 384


@pytest.fixture(scope="module")
def spec_core(smollm2_dir: Path) -> EngineCore:
    return EngineCore(LocalEngineConfig(model_dir=str(smollm2_dir), speculator="default",
                                        spec_block_size=8))


@pytest.fixture(scope="module")
def chat(spec_core: EngineCore, smollm2_dir: Path) -> ChatTemplate:
    return ChatTemplate.from_model_dir(smollm2_dir, spec_core.tokenizer)


def test_required_calls_valid_and_speculation_lossless(spec_core: EngineCore, chat: ChatTemplate) -> None:
    turns = select_turns(4, split="heldout")
    plain = run_turns(spec_core, chat, turns, "required", max_tokens=MAX_CALL_TOKENS, spec_block_size=0)
    spec = run_turns(spec_core, chat, turns, "required", max_tokens=MAX_CALL_TOKENS)
    for turn, p, s in zip(turns, plain, spec, strict=True):
        outcome = score_output(p.text, turn, chat.tool_format)
        assert outcome.kind == "call", (outcome, p.text)
        assert s.token_ids == p.token_ids  # speculation under a grammar changes nothing
    assert sum(r.final.spec.verify_steps for r in spec if r.final.spec) > 0


def test_auto_never_breaks_a_call(spec_core: EngineCore, chat: ChatTemplate) -> None:
    turns = select_turns(4, split="heldout", kind=None)
    for turn, r in zip(turns, run_turns(spec_core, chat, turns, "auto", max_tokens=120), strict=True):
        assert score_output(r.text, turn, chat.tool_format).kind in ("call", "text"), r.text


# A voice-sized budget. Held-out tool turns 12 (cancel_ride) and 14 (start_service): before
# budget steering (tools_grammar/closing.py) greedy SmolLM2 padded the first free string to its
# 64-character cap ("5634899999...") and both calls were cut mid-string at 96 tokens
# (docs/voice-defaults.md); the dental turn is the acceptance conversation's.
VOICE_BUDGET = 96
PADDED_TURNS = (12, 14)


def _matches_schema(args: dict, parameters: dict) -> bool:
    """Args hold every required key, no unknown key, and values of the declared JSON types."""
    props = parameters.get("properties", {})
    kinds = {"string": str, "integer": int, "number": (int, float), "boolean": bool,
             "array": list, "object": dict}
    return (set(parameters.get("required", [])) <= set(args) <= set(props)
            and all(isinstance(v, kinds.get(props[k].get("type"), object)) for k, v in args.items()))


def test_required_calls_close_within_a_voice_budget(spec_core: EngineCore, chat: ChatTemplate) -> None:
    from turnspec.benchmarks.voice_turns import dental_turns
    from turnspec.tools_grammar.parser import ToolCallDone, ToolCallStreamParser
    from turnspec.tools_grammar.schema import parse_tools

    held_out = select_turns(max(PADDED_TURNS) + 1, split="heldout")
    turns = [held_out[i] for i in PADDED_TURNS] + dental_turns()[:1]
    plain = run_turns(spec_core, chat, turns, "required", max_tokens=VOICE_BUDGET, spec_block_size=0)
    spec = run_turns(spec_core, chat, turns, "required", max_tokens=VOICE_BUDGET)
    for turn, p, s in zip(turns, plain, spec, strict=True):
        assert p.final.finish_reason == "stop" and len(p.token_ids) <= VOICE_BUDGET, p.text
        parser = ToolCallStreamParser(chat.tool_format, parse_tools(turn.tools))
        (call,) = [e for e in parser.feed(p.text) + parser.finish() if isinstance(e, ToolCallDone)]
        schema = next(t["function"]["parameters"] for t in turn.tools
                      if t["function"]["name"] == call.name)
        assert _matches_schema(json.loads(call.arguments_json), schema), (call, p.text)
        assert s.token_ids == p.token_ids  # steering is a function of prefix and budget left
