"""The language each tool_choice mode allows, checked on strings (no tokenizer needed)."""

from __future__ import annotations

import json

import pytest
import xgrammar as xgr

from turnspec.tools_grammar.formats import get_format
from turnspec.tools_grammar.grammar_spec import OutputBounds, build_structural_tag
from turnspec.tools_grammar.schema import ToolChoice, parse_tools

TOOLS = parse_tools(
    [
        {"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 10},
                "email": {"type": "string", "format": "email", "maxLength": 8},
                "days": {"type": "integer", "minimum": 1, "maximum": 14},
            },
            "required": ["city"],
        }}},
        {"type": "function", "function": {"name": "end_call"}},
    ]
)
HERMES, LLAMA = get_format("hermes"), get_format("llama3_json")


def accepts(fmt, choice: ToolChoice, text: str, parallel: bool = False) -> bool:
    spec = build_structural_tag(TOOLS, choice, fmt, parallel_tool_calls=parallel)
    grammar = xgr.Grammar.from_structural_tag(json.dumps(spec))
    return xgr.testing._is_grammar_accept_string(grammar, text)


def call(fmt, name: str, args: dict) -> str:
    return fmt.render_call(name, args)


def test_unconstrained_cases_and_unknown_function() -> None:
    assert build_structural_tag(TOOLS, ToolChoice("none"), HERMES) is None
    assert build_structural_tag([], ToolChoice("auto"), HERMES) is None
    with pytest.raises(ValueError, match="unknown tool 'nope'"):
        build_structural_tag(TOOLS, ToolChoice("function", "nope"), HERMES)


def test_required_forces_exactly_one_compact_call() -> None:
    required = ToolChoice("required")
    weather = call(HERMES, "get_weather", {"city": "Paris", "days": 3})
    assert accepts(HERMES, required, weather)
    assert accepts(HERMES, required, call(HERMES, "end_call", {}))
    assert not accepts(HERMES, required, weather.replace('"city":', '"city": '))  # spaced JSON
    assert not accepts(HERMES, required, "Sure. " + weather)  # no text first
    assert not accepts(HERMES, required, weather + "\n" + weather)
    assert accepts(HERMES, required, weather + "\n" + weather, parallel=True)
    assert not accepts(HERMES, required, call(HERMES, "get_weather", {"days": 3}))  # missing city
    assert not accepts(HERMES, required, call(HERMES, "get_weather", {"city": "P", "days": 15}))
    assert not accepts(HERMES, required, call(HERMES, "get_weather", {"city": "P", "wind": 1}))


def test_named_function_allows_only_that_tool() -> None:
    named = ToolChoice("function", "end_call")
    assert accepts(LLAMA, named, call(LLAMA, "end_call", {}))
    assert not accepts(LLAMA, named, call(LLAMA, "get_weather", {"city": "Rome"}))


def test_auto_is_text_or_a_call_never_both_orders() -> None:
    auto = ToolChoice("auto")
    weather = call(HERMES, "get_weather", {"city": "Oslo"})
    assert accepts(HERMES, auto, "It is sunny in Oslo.")
    assert accepts(HERMES, auto, "")
    assert accepts(HERMES, auto, "Let me check. " + weather)
    assert not accepts(HERMES, auto, weather + " Done.")
    assert not accepts(HERMES, auto, 'Sure <tool_call>\n{"name":"get_weather","arguments":{"city":')
    assert accepts(LLAMA, auto, "It is sunny {mostly}.")
    assert accepts(LLAMA, auto, call(LLAMA, "get_weather", {"city": "Oslo"}))
    assert not accepts(LLAMA, auto, ' {"name":"get_weather"}')  # would parse as a broken call
    assert not accepts(LLAMA, auto, "<|python_tag|>x")


def test_auto_turns_a_tool_tag_into_a_call() -> None:
    # SmolLM2 answered half the hand-written voice turns with a tool result it made up. In auto
    # mode free text that reaches `<tool_` must go on as a call: no result tag, nor a near one.
    auto = ToolChoice("auto")
    weather = call(HERMES, "get_weather", {"city": "Oslo"})
    for invented in ('<tool_response>\n{"city":"Oslo","sky":"sunny"}\n</tool_response>',
                     '<tool_response]\n{"sky":"sunny"}', "One moment. <tool_result>sunny"):
        assert not accepts(HERMES, auto, invented)
    assert accepts(HERMES, auto, "Checking. " + weather)
    assert accepts(HERMES, auto, "The tool_response comes later, and a <tool is a tag.")
    assert build_structural_tag(TOOLS, auto, HERMES)["format"]["triggers"] == ["<tool_"]


def test_length_limited_strings_are_valid_json() -> None:
    """xgrammar 0.2.9 lets raw control characters into maxLength strings; we patch that."""
    required = ToolChoice("required")
    prefix = HERMES.call_prefix("get_weather")
    assert not accepts(HERMES, required, prefix + '{"city":"a\x10b"}' + HERMES.call_suffix)
    assert accepts(HERMES, required, prefix + '{"city":"Zürich é"}' + HERMES.call_suffix)
    assert not accepts(HERMES, required, prefix + '{"city":"Oslo","email":"abc@de.com"}' + HERMES.call_suffix)


@pytest.mark.parametrize("field", ["city", "notes"])
def test_strings_refuse_utf16_surrogates(field: str) -> None:
    """xgrammar 0.2.9 admits the bytes of a UTF-16 surrogate (not valid UTF-8) in strings."""
    tools = parse_tools([{"type": "function", "function": {"name": "t", "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "maxLength": 5}, "notes": {"type": "string"}},
    }}}])
    spec = build_structural_tag(tools, ToolChoice("required"), HERMES)
    grammar = xgr.Grammar.from_structural_tag(json.dumps(spec))
    head = HERMES.call_prefix("t").encode() + b'{"' + field.encode() + b'":"'
    for body, ok in ((b"\xed\xa7\xaa", False), ("中é".encode(), True)):
        matcher = xgr.testing._get_matcher_from_grammar(grammar)
        text = head + body + b'"}' + HERMES.call_suffix.encode()
        assert (matcher.accept_string(text) and matcher.is_completed()) is ok


def test_output_bounds_close_unbounded_values() -> None:
    """Plain strings, numbers and arrays get caps so a repeating model must close them."""
    tools = parse_tools([{"type": "function", "function": {"name": "t", "parameters": {
        "type": "object",
        "properties": {
            "s": {"type": "string"}, "long": {"type": "string", "minLength": 80}, "n": {"type": "integer"},
            "big": {"type": "integer", "minimum": 10**16}, "a": {"type": "array", "items": {"type": "boolean"}},
            "e": {"enum": ["x"]},
        },
    }}}])
    bounds = OutputBounds(max_string_chars=8, max_array_items=3, max_abs_number=999)
    spec = build_structural_tag(tools, ToolChoice("required"), HERMES, bounds=bounds)
    grammar = xgr.Grammar.from_structural_tag(json.dumps(spec))

    def ok(args: str) -> bool:
        return xgr.testing._is_grammar_accept_string(grammar, HERMES.call_prefix("t") + args + HERMES.call_suffix)

    assert ok('{"s":"12345678"}') and not ok('{"s":"123456789"}')
    assert ok('{"long":"' + "x" * 80 + '"}')  # a cap never undercuts the schema's minimum
    assert ok('{"n":-999}') and not ok('{"n":1000}')
    assert ok('{"big":' + str(10**16 + 5) + "}")  # nor its lower bound
    assert ok('{"a":[true,false,true]}') and not ok('{"a":[true,false,true,true]}')
    assert ok('{"e":"x"}')
    with pytest.raises(ValueError, match="OutputBounds.max_string_chars: expected >= 1, got 0"):
        OutputBounds(max_string_chars=0)
