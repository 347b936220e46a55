"""Property tests (hypothesis) over the tool-schema parser: any `tools` / `tool_choice` a client
sends parses into ToolSpecs or raises a ValueError that names the path of the problem; a tool
set that parses either compiles to a grammar or raises an exception the server turns into a
400 (`invalid_tool_schema`, server/session.py), never a crash."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnspec.tools_grammar.formats import get_format
from turnspec.tools_grammar.schema import ToolSpec, parse_tool_choice, parse_tools

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=8),
                    st.floats(allow_nan=False, width=32))
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=12)
TYPES = st.sampled_from(["object", "string", "integer", "number", "boolean", "array", "null",
                         "bogus"])
schema = st.recursive(
    st.one_of(json_values, st.fixed_dictionaries({"type": TYPES}, optional={
        "enum": json_values, "minimum": scalars, "maximum": scalars, "pattern": scalars,
        "maxLength": scalars, "format": scalars})),
    lambda inner: st.fixed_dictionaries({"type": st.one_of(TYPES, json_values)}, optional={
        "properties": st.dictionaries(st.text(max_size=6), inner, max_size=3),
        "required": st.one_of(st.lists(st.text(max_size=6), max_size=3), json_values),
        "items": inner, "anyOf": st.lists(inner, max_size=2),
        "additionalProperties": st.one_of(st.booleans(), inner)}),
    max_leaves=8)
tool = st.one_of(json_values, st.fixed_dictionaries(
    {"type": st.one_of(st.just("function"), json_values)},
    optional={"function": st.fixed_dictionaries({}, optional={
        "name": st.one_of(st.from_regex(r"[a-z_]{1,10}", fullmatch=True), json_values),
        "description": json_values,
        "parameters": st.one_of(schema.map(lambda s: {**s, "type": "object"}
                                           if isinstance(s, dict) else s), schema)})}))
tools = st.one_of(st.none(), json_values, st.lists(tool, max_size=3))
choices = st.one_of(st.none(), json_values, st.sampled_from(["auto", "none", "required"]),
                    st.fixed_dictionaries({"type": st.just("function"),
                                           "function": st.fixed_dictionaries(
                                               {"name": st.text(max_size=10)})}))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tools, choices)
def test_tools_and_tool_choice_parse_or_raise_value_error(raw_tools, raw_choice):
    try:
        specs = parse_tools(raw_tools)
        choice = parse_tool_choice(raw_choice, specs)
    except ValueError as e:
        path = str(e).split(":", 1)[0]
        assert path.startswith(("tools", "tool_choice", "tool ")), e
        return
    assert all(isinstance(s, ToolSpec) for s in specs)
    assert choice.mode in ("auto", "required", "none", "function")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.filter_too_much])
@given(st.lists(tool, min_size=1, max_size=2))
def test_parsed_tools_compile_or_raise(compiler, raw_tools):
    try:
        specs = parse_tools(raw_tools)
        choice = parse_tool_choice("required", specs)
    except ValueError:
        return
    try:
        compiler.matcher(specs, choice, get_format("hermes"))
    except Exception as e:  # the session answers these with 400 invalid_tool_schema
        assert str(e) or type(e).__name__
