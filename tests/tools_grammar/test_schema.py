"""Tool and tool_choice parsing: both OpenAI shapes, and errors that name the path."""

from __future__ import annotations

import pytest

from turnspec.tools_grammar.schema import (
    ToolChoice,
    ToolSpec,
    parse_tool_choice,
    parse_tools,
    tools_hash,
    validate_arguments,
)

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
    },
    "required": ["city"],
}


def chat_tool(name: str, parameters: dict | None = None) -> dict:
    function = {"name": name, "description": f"{name} tool"}
    if parameters is not None:
        function["parameters"] = parameters
    return {"type": "function", "function": function}


def test_parses_chat_completions_and_responses_forms() -> None:
    flat = {"type": "function", "name": "end_call", "description": "Hang up", "parameters": {"type": "object", "properties": {}}}
    tools = parse_tools([chat_tool("get_weather", WEATHER), flat])
    assert [t.name for t in tools] == ["get_weather", "end_call"]
    assert tools[0].parameters == WEATHER
    assert tools[1].description == "Hang up"
    assert tools[0].to_openai()["function"]["parameters"] == WEATHER


def test_missing_or_partial_parameters_become_an_empty_object_schema() -> None:
    tools = parse_tools([chat_tool("a"), chat_tool("b", {"properties": {"x": {"type": "string"}}})])
    assert tools[0].parameters == {"type": "object", "properties": {}}
    assert tools[1].parameters["type"] == "object"
    assert parse_tools(None) == []


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ([chat_tool("a"), chat_tool("b"), chat_tool("a")], "tools[2]: duplicate tool name 'a' (already defined by tools[0])"),
        ([chat_tool("get weather")], "tools[0].function.name: expected 1-64 characters"),
        ([{"type": "web_search"}], "tools[0].type: only 'function' tools are supported, got 'web_search'"),
        ([chat_tool("a", {"type": "array"})], "tools[0].function.parameters.type: function parameters must be type 'object'"),
        ([chat_tool("a", [1])], "tools[0].function.parameters: expected a JSON Schema object, got list"),
        (
            [chat_tool("a"), chat_tool("b"), chat_tool("c", {"type": "object", "properties": {"city": {"type": "text"}}})],
            "tools[2].function.parameters.properties.city.type: unknown type 'text'",
        ),
        (
            [{"type": "function", "name": "a", "parameters": {"type": "object", "properties": {"x": {"oneOf": []}}}}],
            "tools[0].parameters.properties.x: unsupported JSON Schema keyword 'oneOf'; use anyOf",
        ),
        (
            [chat_tool("a", {"type": "object", "properties": {}, "required": ["city"]})],
            "tools[0].function.parameters.required: 'city' is required but not declared in properties",
        ),
        ("not a list", "tools: expected a list of tool objects, got str"),
    ],
)
def test_bad_tools_raise_with_the_path(tools: object, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_tools(tools)  # type: ignore[arg-type]
    assert str(info.value).startswith(message), str(info.value)


def test_tool_choice_forms() -> None:
    tools = parse_tools([chat_tool("get_weather", WEATHER), chat_tool("end_call")])
    assert parse_tool_choice(None, tools) == ToolChoice("auto")
    assert parse_tool_choice(None, []) == ToolChoice("none")
    assert parse_tool_choice("required", tools) == ToolChoice("required")
    assert parse_tool_choice("none", tools) == ToolChoice("none")
    named = ToolChoice("function", "end_call")
    assert parse_tool_choice({"type": "function", "function": {"name": "end_call"}}, tools) == named
    assert parse_tool_choice({"type": "function", "name": "end_call"}, tools) == named


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"type": "function", "function": {"name": "book_flight"}}, "tool_choice.function.name: unknown tool 'book_flight' (known: get_weather, end_call)"),
        ({"type": "function", "name": "nope"}, "tool_choice.name: unknown tool 'nope'"),
        ("sometimes", "tool_choice: expected 'auto', 'required', 'none' or a function object, got 'sometimes'"),
        ({"type": "allowed_tools"}, "tool_choice.type: expected 'function', got 'allowed_tools'"),
    ],
)
def test_bad_tool_choice_raises(raw: object, message: str) -> None:
    tools = parse_tools([chat_tool("get_weather", WEATHER), chat_tool("end_call")])
    with pytest.raises(ValueError) as info:
        parse_tool_choice(raw, tools)  # type: ignore[arg-type]
    assert str(info.value).startswith(message), str(info.value)


def test_required_without_tools_and_choice_invariants() -> None:
    with pytest.raises(ValueError, match="'required' needs at least one tool"):
        parse_tool_choice("required", [])
    with pytest.raises(ValueError, match="exactly when mode is 'function'"):
        ToolChoice("function")
    with pytest.raises(ValueError, match="type 'object'"):
        ToolSpec("a", "", {"type": "string"})


def test_validate_arguments_names_the_path() -> None:
    (tool,) = parse_tools([chat_tool("get_weather", WEATHER)])
    validate_arguments(tool, {"city": "Paris", "unit": "celsius", "days": 3})
    cases = {
        "get_weather.arguments: missing required property 'city'": {"days": 2},
        "get_weather.arguments.unit: expected one of ['celsius', 'fahrenheit'], got 'kelvin'": {"city": "x", "unit": "kelvin"},
        "get_weather.arguments.days: expected a number <= 14, got 99": {"city": "x", "days": 99},
        "get_weather.arguments.city: expected string, got integer 5": {"city": 5},
        "get_weather.arguments: expected a JSON object, got list": [],
    }
    for message, arguments in cases.items():
        with pytest.raises(ValueError) as info:
            validate_arguments(tool, arguments)
        assert str(info.value) == message


def test_tools_hash_depends_on_names_and_schemas_only() -> None:
    a = parse_tools([chat_tool("get_weather", WEATHER)])
    b = parse_tools([{"type": "function", "name": "get_weather", "description": "other words", "parameters": WEATHER}])
    c = parse_tools([chat_tool("get_weather", {**WEATHER, "required": []})])
    assert tools_hash(a) == tools_hash(b)
    assert tools_hash(a) != tools_hash(c)
