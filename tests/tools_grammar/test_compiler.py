"""GrammarCompiler.prepare / structural_tag with the real SmolLM2 tokenizer: one compile per tool
set and request shape, fresh matchers from it, and the structural tag built without a compile."""

from __future__ import annotations

import json

from turnspec.tools_grammar.compiler import StructuralTagGrammar
from turnspec.tools_grammar.formats import get_format
from turnspec.tools_grammar.schema import ToolChoice, parse_tools

FMT = get_format("hermes")


def _tools(tag: str) -> list:
    return parse_tools([{"type": "function", "function": {
        "name": f"lookup_{tag}", "description": "Find an order.",
        "parameters": {"type": "object", "properties": {"order": {"type": "string"}},
                       "required": ["order"]}}}])


def test_structural_tag_is_built_without_a_compile(compiler) -> None:
    tools = _tools("tag_only")
    misses = compiler.misses
    tag = compiler.structural_tag(tools, ToolChoice("required"), FMT)
    assert isinstance(tag, StructuralTagGrammar)
    assert json.loads(tag.structural_tag)["type"] == "structural_tag"
    assert compiler.misses == misses  # nothing compiled
    prepared = compiler.prepare(tools, ToolChoice("required"), FMT)
    assert compiler.misses == misses + 1
    assert prepared.structural_tag == tag.structural_tag  # the tag SGLang compiles is ours
    assert compiler.structural_tag(tools, ToolChoice("none"), FMT) is None
    assert compiler.structural_tag([], ToolChoice("auto"), FMT) is None


def test_prepared_grammar_gives_fresh_matchers(compiler, smollm2_tokenizer) -> None:
    tools = _tools("fresh")
    prepared = compiler.prepare(tools, ToolChoice("required"), FMT)
    assert prepared.closer is not None  # required calls are budget-steered
    assert compiler.prepare(tools, ToolChoice("auto"), FMT).closer is None
    hits = compiler.hits
    assert compiler.prepare(tools, ToolChoice("required"), FMT).compiled is prepared.compiled
    assert compiler.hits == hits + 1
    a, b = prepared.matcher(), prepared.matcher()
    call = smollm2_tokenizer.encode(FMT.render_call("lookup_fresh", {"order": "A1"}),
                                    add_special_tokens=False)
    assert a.accept_tokens(call) == len(call) and a.is_completed()
    assert not b.is_completed() and b.accept_tokens(call[:1]) == 1  # b starts from the start
    assert a.structural_tag == prepared.structural_tag
