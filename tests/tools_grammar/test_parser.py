"""Streaming parser: events for each format, and identical events for any split of a stream."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnspec.tools_grammar.formats import get_format
from turnspec.tools_grammar.parser import (
    ParseEvent,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallDone,
    ToolCallInvalid,
    ToolCallStarted,
    ToolCallStreamParser,
)
from turnspec.tools_grammar.schema import parse_tools

TOOLS = parse_tools(
    [
        {"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 14}},
            "required": ["city"],
        }}},
        {"type": "function", "function": {"name": "end_call"}},
    ]
)


def run(fmt: str, chunks: list[str], tools=TOOLS) -> list[ParseEvent]:
    parser = ToolCallStreamParser(fmt, tools)
    events: list[ParseEvent] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    return events + parser.finish()


def merged(events: list[ParseEvent]) -> list[ParseEvent]:
    """Adjacent text deltas, and adjacent argument deltas of one call, joined."""
    out: list[ParseEvent] = []
    for event in events:
        last = out[-1] if out else None
        if isinstance(event, TextDelta) and isinstance(last, TextDelta):
            out[-1] = TextDelta(last.text + event.text)
        elif isinstance(event, ToolCallArgumentsDelta) and isinstance(last, ToolCallArgumentsDelta) and last.index == event.index:
            out[-1] = ToolCallArgumentsDelta(event.index, event.call_id, last.delta + event.delta)
        else:
            out.append(event)
    return out


def test_hermes_text_then_call() -> None:
    stream = 'One moment. <tool_call>\n{"name":"get_weather","arguments":{"city":"Zürich","days":2}}\n</tool_call>'
    assert run("hermes", [stream]) == [
        TextDelta("One moment. "),
        ToolCallStarted(0, "call_0", "get_weather"),
        ToolCallArgumentsDelta(0, "call_0", '{"city":"Zürich","days":2}'),
        ToolCallDone(0, "call_0", "get_weather", '{"city":"Zürich","days":2}', {"city": "Zürich", "days": 2}),
    ]


def test_hermes_streams_arguments_and_holds_back_only_a_tag_prefix() -> None:
    parser = ToolCallStreamParser("hermes", TOOLS, call_id_prefix="call_r7_")
    assert parser.feed("Sure <tool") == [TextDelta("Sure ")]
    assert parser.feed("_call>\n{\"name\":\"get_") == []
    assert parser.feed('weather","arguments":{"ci') == [
        ToolCallStarted(0, "call_r7_0", "get_weather"),
        ToolCallArgumentsDelta(0, "call_r7_0", '{"ci'),
    ]
    assert parser.feed('ty":"Oslo"}}') == [
        ToolCallArgumentsDelta(0, "call_r7_0", 'ty":"Oslo"}'),
        ToolCallDone(0, "call_r7_0", "get_weather", '{"city":"Oslo"}', {"city": "Oslo"}),
    ]
    assert parser.feed("\n</tool_call>") == []
    assert parser.finish() == []


def test_hermes_parallel_calls_drop_the_separator_and_text_keeps_lookalikes() -> None:
    fmt = get_format("hermes")
    stream = fmt.render_call("end_call", {}) + "\n" + fmt.render_call("get_weather", {"city": "Rome"}) + "\n"
    events = merged(run("hermes", [stream]))
    assert [type(e).__name__ for e in events] == ["ToolCallStarted", "ToolCallArgumentsDelta", "ToolCallDone"] * 2
    assert events[5] == ToolCallDone(1, "call_1", "get_weather", '{"city":"Rome"}', {"city": "Rome"})
    assert run("hermes", ["a <tool", "_cal", "l", " x </tool_call>"]) == [
        TextDelta("a "), TextDelta("<tool_call x </tool_call>")
    ]
    assert merged(run("hermes", ["ends with <tool_c"])) == [TextDelta("ends with <tool_c")]


@pytest.mark.parametrize(
    ("stream", "error"),
    [
        ("<tool_call>oops</tool_call>", "expected '{' to open the call object, got 'o'"),
        ('<tool_call>{"name":"book_flight","arguments":{}}</tool_call>', "unknown tool 'book_flight' (known: get_weather, end_call)"),
        ('<tool_call>{"name":"get_weather","arguments":{"days":3}}</tool_call>', "get_weather.arguments: missing required property 'city'"),
        ('<tool_call>{"name":"get_weather","arguments":{"city":"x"', "the stream ended inside a tool call"),
        ('<tool_call>{"arguments":{}}</tool_call>', "the call object has no 'name'"),
        ('<tool_call>{"name":"end_call","arguments":"{}"}</tool_call>', "end_call.arguments: expected a JSON object, got str"),
        ('<tool_call>{"name":"end_call","arguments":{"a":tru}}</tool_call>', "arguments are not valid JSON"),
    ],
)
def test_hermes_broken_calls_become_invalid(stream: str, error: str) -> None:
    events = merged(run("hermes", [stream, " after"]))
    invalid = [e for e in events if isinstance(e, ToolCallInvalid)]
    assert len(invalid) == 1 and invalid[0].error.startswith(error), events
    assert invalid[0].raw.startswith("<tool_call>")
    assert not any(isinstance(e, ToolCallDone) for e in events)


def test_llama3_json_call_and_text() -> None:
    stream = '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Lima", "days": 1}}'
    assert merged(run("llama3_json", list(stream))) == [
        ToolCallStarted(0, "call_0", "get_weather"),
        ToolCallArgumentsDelta(0, "call_0", '{"city": "Lima", "days": 1}'),
        ToolCallDone(0, "call_0", "get_weather", '{"city": "Lima", "days": 1}', {"city": "Lima", "days": 1}),
    ]
    assert run("llama3_json", ["  It is sunny {really}."]) == [TextDelta("  It is sunny {really}.")]
    assert run("llama3_json", ["<|pyth", "on_tag|>print(1)"]) == [TextDelta("<|python_tag|>print(1)")]
    events = run("llama3_json", ['{"name":"end_call","parameters":{}}; {"name":"end_call","parameters":{}}'])
    assert [e.index for e in events if isinstance(e, ToolCallDone)] == [0, 1]


def test_keys_in_any_order_and_without_tools() -> None:
    stream = '<tool_call>{"arguments":{"x":[1,{"y":"}"}]},"id":7,"name":"anything"}</tool_call>'
    events = merged(run("hermes", [stream], tools=None))
    assert events[0] == ToolCallStarted(0, "call_0", "anything")
    assert events[-1] == ToolCallDone(0, "call_0", "anything", '{"x":[1,{"y":"}"}]}', {"x": [1, {"y": "}"}]})


def test_feed_after_finish_is_an_error() -> None:
    parser = ToolCallStreamParser("hermes")
    parser.finish()
    with pytest.raises(RuntimeError, match="after finish"):
        parser.feed("x")


# -- split invariance ---------------------------------------------------------------------------

TEXT_ALPHABET = st.sampled_from(list("ab <>/_{}\":,\n") + ["tool", "call", "<tool_call>", "</tool_call>", "é", "😀", "<|python_tag|>"])
ARGS = st.fixed_dictionaries({"city": st.text(alphabet='ab "\\}{<>é', max_size=6)}, optional={"days": st.integers(1, 14)})


@st.composite
def hermes_streams(draw) -> str:
    fmt = get_format("hermes")
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["text", "call", "spaced", "broken"]))
        if kind == "text":
            parts.append("".join(draw(st.lists(TEXT_ALPHABET, max_size=8))))
        elif kind == "call":
            parts.append(fmt.render_call("get_weather", draw(ARGS)))
        elif kind == "spaced":
            parts.append("<tool_call> " + json.dumps({"name": "get_weather", "arguments": draw(ARGS)}, indent=1) + " </tool_call>")
        else:
            parts.append(fmt.render_call("get_weather", draw(ARGS))[: draw(st.integers(0, 40))])
    return "".join(parts)


@st.composite
def llama_streams(draw) -> str:
    head = draw(st.sampled_from(["", " ", "<|python_tag|>", "\n<|python_tag|> "]))
    kind = draw(st.sampled_from(["call", "text", "two"]))
    call = json.dumps({"name": "get_weather", "parameters": draw(ARGS)})
    if kind == "text":
        return head + "".join(draw(st.lists(TEXT_ALPHABET, max_size=10)))
    body = call + ("; " + call if kind == "two" else "")
    return head + body[: len(body) - draw(st.integers(0, 3))]


def splits(stream: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(stream) + 1) for c in cuts})
    return [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]


@settings(max_examples=300, deadline=None)
@given(stream=hermes_streams(), cuts=st.lists(st.integers(0, 10_000), max_size=12))
def test_hermes_events_do_not_depend_on_splits(stream: str, cuts: list[int]) -> None:
    whole = merged(run("hermes", [stream]))
    assert merged(run("hermes", splits(stream, cuts))) == whole
    assert merged(run("hermes", list(stream))) == whole


@settings(max_examples=200, deadline=None)
@given(stream=llama_streams(), cuts=st.lists(st.integers(0, 10_000), max_size=12))
def test_llama3_events_do_not_depend_on_splits(stream: str, cuts: list[int]) -> None:
    whole = merged(run("llama3_json", [stream]))
    assert merged(run("llama3_json", splits(stream, cuts))) == whole
    assert merged(run("llama3_json", list(stream))) == whole


@settings(max_examples=200, deadline=None)
@given(text=st.lists(TEXT_ALPHABET, max_size=8).map("".join), args=ARGS, cuts=st.lists(st.integers(0, 10_000), max_size=8))
def test_grammar_shaped_output_round_trips(text: str, args: dict, cuts: list[int]) -> None:
    """What the auto-mode grammar allows (text without the call tag, then one call) parses back
    to exactly that text and that call, and the argument deltas spell arguments_json."""
    text = text.replace("<tool_call>", "")
    fmt = get_format("hermes")
    events = merged(run("hermes", splits(text + fmt.render_call("get_weather", args), cuts)))
    spoken = "".join(e.text for e in events if isinstance(e, TextDelta))
    deltas = "".join(e.delta for e in events if isinstance(e, ToolCallArgumentsDelta))
    done = [e for e in events if isinstance(e, ToolCallDone)]
    assert spoken == text
    assert len(done) == 1 and done[0].arguments == args
    assert deltas == done[0].arguments_json == json.dumps(args, separators=(",", ":"), ensure_ascii=False)
