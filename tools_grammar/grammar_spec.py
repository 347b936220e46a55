"""What the model may write, per tool_choice mode, as an xgrammar structural tag (a plain dict).

Building blocks (fmt = the model family's ToolCallFormat):
    call(tool)  = fmt.call_prefix(name) + ARGS(tool.parameters) + fmt.call_suffix
    ARGS        = the tool's JSON Schema as compact JSON: separators (",", ":"), no free
                  whitespace, declared property order. This is what fmt.render_call writes, so
                  forced output and re-rendered history agree byte for byte.
Modes:
    function    one call of the named tool, then the stop token.
    required    one call of any tool (or, with parallel_tool_calls and a format that has a call
                separator, one or more calls joined by it), then the stop token.
    auto        tagged formats (Hermes): free text that never contains the call tag, optionally
                followed by call(s); free text that reaches fmt.call_trigger (Hermes: `<tool_`,
                so also a tool result's tag) must go on as a call; whole-message formats (Llama-3 JSON): a call, or text whose
                first non-space character cannot start a call ('{' or '<').
    none        no grammar (see GrammarCompiler.matcher).
The stop token is allowed only where the grammar is complete: nowhere inside a call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

import xgrammar as xgr

from turnspec.tools_grammar.formats.base import ToolCallFormat
from turnspec.tools_grammar.schema import ToolChoice, ToolSpec, find_tool

# Two fixes to the string characters xgrammar 0.2.9 writes for JSON Schema strings, so every
# string the model can emit decodes as strict UTF-8 and parses with json.loads:
# - length-limited strings ({"maxLength": n}) use [^\"\\\r\n], which admits raw control
#   characters (U+0000..U+001F) that JSON forbids;
# - both that class and the one for unlimited strings admit UTF-16 surrogates (U+D800..U+DFFF,
#   bytes ED A0..BF xx), which are not valid UTF-8 and decode to U+FFFD, breaking maxLength.
# tests/tools_grammar/test_grammar_spec.py pins both. (Escapes stay unavailable inside
# length-limited strings: a safe restriction.)
_STRING_CHAR_CLASSES = (r'[^\"\\\r\n]', r'[^\0-\x1f\"\\\r\n]')
_JSON_STRING_CHAR = r'[^\0-\x1f\"\\\ud800-\udfff]'


@lru_cache(maxsize=1024)
def _arguments_ebnf(parameters_json: str) -> str:
    grammar = xgr.Grammar.from_json_schema(
        parameters_json, any_whitespace=False, separators=(",", ":"), strict_mode=True
    )
    ebnf = str(grammar)
    for loose in _STRING_CHAR_CLASSES:
        ebnf = ebnf.replace(loose, _JSON_STRING_CHAR)
    return ebnf


def clear_schema_cache() -> None:
    _arguments_ebnf.cache_clear()


@dataclass(slots=True, frozen=True)
class OutputBounds:
    """Limits the grammar adds where a tool's schema sets none, so every call ends within a
    bounded number of tokens. Without them a small model that starts repeating inside a string
    ("book_tabl_2_2_2...") or a number never closes it, and max_tokens cuts the call in half:
    SmolLM2-135M, greedy, required mode, broke 2 of 6 held-out calls that way (the tool-call bench,
    96 new tokens). Bounds only narrow the grammar, so every output still validates."""

    max_string_chars: int = 64
    max_array_items: int = 16
    max_abs_number: int = 10**15 - 1
    max_extra_properties: int = 16

    def __post_init__(self) -> None:
        for name in ("max_string_chars", "max_array_items", "max_abs_number", "max_extra_properties"):
            if getattr(self, name) < 1:
                raise ValueError(f"OutputBounds.{name}: expected >= 1, got {getattr(self, name)}")


def arguments_ebnf(tool: ToolSpec, bounds: OutputBounds | None = None) -> str:
    """EBNF (xgrammar dialect) of the tool's arguments object in compact JSON."""
    return _arguments_ebnf(json.dumps(_for_grammar(tool.parameters, bounds or OutputBounds())))


def _for_grammar(schema: dict, bounds: OutputBounds) -> dict:
    """The schema as xgrammar should see it: bounds added (see OutputBounds), and formats
    dropped where a length is set, because xgrammar ignores minLength/maxLength next to a format
    (our validator never checks formats; pattern + length is refused in json_schema.check_schema)."""
    out = dict(schema)
    kinds = set(out["type"]) if isinstance(out.get("type"), list) else {out.get("type")}
    plain = not {"enum", "const", "$ref", "anyOf"} & out.keys()
    if plain and "string" in kinds and not {"pattern", "format", "maxLength"} & out.keys():
        out["maxLength"] = max(bounds.max_string_chars, out.get("minLength", 0))
    if plain and kinds & {"integer", "number"}:
        cap = bounds.max_abs_number
        low = out.get("minimum", out.get("exclusiveMinimum"))
        high = out.get("maximum", out.get("exclusiveMaximum"))
        if high is None:
            out["maximum"] = cap if low is None or low <= 0 else low + cap
        if low is None:
            out["minimum"] = -cap if high is None or high >= 0 else high - cap
    if "array" in kinds and "maxItems" not in out:
        out["maxItems"] = max(bounds.max_array_items, out.get("minItems", 0))
    if "object" in kinds and out.get("additionalProperties", False) is not False:
        out["maxProperties"] = len(out.get("properties", {})) + bounds.max_extra_properties
    if "format" in out and ("minLength" in out or "maxLength" in out):
        del out["format"]
    for key in ("properties", "$defs", "definitions"):
        if isinstance(out.get(key), dict):
            out[key] = {name: _for_grammar(sub, bounds) for name, sub in out[key].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(out.get(key), dict):
            out[key] = _for_grammar(out[key], bounds)
    if isinstance(out.get("anyOf"), list):
        out["anyOf"] = [_for_grammar(sub, bounds) for sub in out["anyOf"]]
    return out


def _call_tag(tool: ToolSpec, fmt: ToolCallFormat, bounds: OutputBounds | None) -> dict:
    return {
        "type": "tag",
        "begin": fmt.call_prefix(tool.name),
        "content": {"type": "grammar", "grammar": arguments_ebnf(tool, bounds)},
        "end": fmt.call_suffix,
    }


def _one_of(elements: list[dict]) -> dict:
    return elements[0] if len(elements) == 1 else {"type": "or", "elements": elements}


def build_structural_tag(
    tools: list[ToolSpec], choice: ToolChoice, fmt: ToolCallFormat, *, parallel_tool_calls: bool = False,
    bounds: OutputBounds | None = None,
) -> dict | None:
    """The structural tag for (tools, choice, fmt); None when the output is unconstrained."""
    if choice.mode == "none" or not tools:
        return None
    if choice.mode == "function":
        tool = find_tool(tools, choice.name or "")
        if tool is None:
            known = ", ".join(t.name for t in tools)
            raise ValueError(f"tool_choice: unknown tool {choice.name!r} (known: {known})")
        return {"type": "structural_tag", "format": _call_tag(tool, fmt, bounds)}
    tags = [_call_tag(t, fmt, bounds) for t in tools]
    parallel = parallel_tool_calls and fmt.call_separator is not None
    if parallel:
        calls = {
            "type": "tags_with_separator", "tags": tags, "separator": fmt.call_separator,
            "at_least_one": True, "stop_after_first": False,
        }
    else:
        calls = _one_of(tags)
    if choice.mode == "required":
        return {"type": "structural_tag", "format": calls}
    if fmt.call_open is not None:  # auto, calls are tagged inside free text
        body = {
            "type": "triggered_tags", "triggers": [fmt.call_trigger or fmt.call_open], "tags": tags,
            "at_least_one": False, "stop_after_first": not parallel,
        }
        return {"type": "structural_tag", "format": body}
    # auto, the call is the whole message: a call, or text that cannot be mistaken for one.
    first = fmt.call_prefix("x")[0]
    blocked = f" \\t\\r\\n{first}<"
    text = {
        "type": "sequence",
        "elements": [{"type": "regex", "pattern": f"[ \\t\\r\\n]*[^{blocked}]"}, {"type": "any_text"}],
    }
    blank = {"type": "regex", "pattern": "[ \\t\\r\\n]*"}
    return {"type": "structural_tag", "format": {"type": "or", "elements": [calls, text, blank]}}
