"""Call formats: rendering, history flattening, and the registry."""

from __future__ import annotations

import json

import pytest

from turnspec.tools_grammar.formats import format_for_model, get_format
from turnspec.tools_grammar.parser import ToolCallDone, ToolCallStreamParser
from turnspec.tools_grammar.schema import parse_tools

TOOLS = parse_tools(
    [
        {"type": "function", "function": {"name": "book_table", "description": "Book a table.", "parameters": {
            "type": "object",
            "properties": {"party_size": {"type": "integer"}, "time": {"type": "string"}},
            "required": ["party_size", "time"],
        }}},
        {"type": "function", "function": {"name": "end_call", "description": "Hang up."}},
    ]
)

HISTORY = [
    {"role": "system", "content": "You are the host at Luigi's."},
    {"role": "user", "content": "uh, a table for four at seven thirty"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "book_table", "arguments": '{"party_size":4,"time":"19:30"}'}},
        {"id": "call_b", "type": "function", "function": {"name": "end_call", "arguments": "{}"}},
    ]},
    {"role": "tool", "tool_call_id": "call_a", "content": '{"status":"confirmed"}'},
    {"role": "tool", "tool_call_id": "call_b", "content": "ok"},
    {"role": "assistant", "content": "You're booked for seven thirty."},
]


def test_render_call_is_compact_and_round_trips_through_the_parser() -> None:
    for name in ("hermes", "llama3_json"):
        fmt = get_format(name)
        text = fmt.render_call("book_table", {"party_size": 4, "time": "19:30", "note": "café"})
        assert ", " not in text and '": ' not in text and "café" in text
        events = ToolCallStreamParser(fmt, TOOLS).feed(text)
        done = [e for e in events if isinstance(e, ToolCallDone)]
        assert done and done[0].name == "book_table" and done[0].arguments["party_size"] == 4
    assert get_format("hermes").render_call("end_call", {}) == '<tool_call>\n{"name":"end_call","arguments":{}}\n</tool_call>'
    assert get_format("llama3_json").render_call("end_call", {}) == '{"name":"end_call","parameters":{}}'


def test_render_call_json_keeps_the_emitted_text() -> None:
    fmt = get_format("hermes")
    assert fmt.render_call_json("x", '{"a":"caf\\u00e9"}') == '<tool_call>\n{"name":"x","arguments":{"a":"caf\\u00e9"}}\n</tool_call>'
    with pytest.raises(ValueError, match="x: arguments is not valid JSON"):
        fmt.render_call_json("x", '{"a":')
    with pytest.raises(ValueError, match="x: arguments must be a JSON object"):
        fmt.render_call_json("x", "[1]")


def test_hermes_history_flattening() -> None:
    out = get_format("hermes").to_template_messages(HISTORY, TOOLS)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user", "assistant"]
    assert out[0]["content"].startswith("You are the host at Luigi's.\n\n# Tools")
    listed = out[0]["content"].split("<tools>\n")[1].split("\n</tools>")[0].splitlines()
    assert [json.loads(line)["function"]["name"] for line in listed] == ["book_table", "end_call"]
    assert out[2]["content"] == (
        '<tool_call>\n{"name":"book_table","arguments":{"party_size":4,"time":"19:30"}}\n</tool_call>\n'
        '<tool_call>\n{"name":"end_call","arguments":{}}\n</tool_call>'
    )
    assert out[3]["content"] == '<tool_response>\n{"status":"confirmed"}\n</tool_response>\n<tool_response>\nok\n</tool_response>'


def test_llama3_history_flattening_and_no_tools() -> None:
    out = get_format("llama3_json").to_template_messages(HISTORY, TOOLS)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "ipython", "ipython", "assistant"]
    assert '"parameters":<arguments-object>' in out[0]["content"]
    plain = get_format("hermes").to_template_messages([{"role": "user", "content": [{"type": "text", "text": "hi"}]}], [])
    assert plain == [{"role": "user", "content": "hi"}]
    prepended = get_format("hermes").to_template_messages([{"role": "user", "content": "hi"}], TOOLS)
    assert prepended[0]["role"] == "system" and prepended[0]["content"].startswith("# Tools")


def test_bad_messages_raise() -> None:
    fmt = get_format("hermes")
    with pytest.raises(ValueError, match=r"messages\[0\].role: expected system, developer, user, assistant or tool, got 'robot'"):
        fmt.to_template_messages([{"role": "robot", "content": "x"}], [])
    with pytest.raises(ValueError, match=r"messages\[0\].tool_calls\[0\]: expected"):
        fmt.to_template_messages([{"role": "assistant", "tool_calls": [{"id": "c"}]}], [])


def test_registry() -> None:
    assert get_format("hermes").name == "hermes"
    with pytest.raises(ValueError, match=r"unknown tool-call format 'xml' \(known: hermes, llama3_json\)"):
        get_format("xml")
    assert format_for_model("llama", "{{'<|im_start|>' + message['role']}}") == "hermes"  # SmolLM2
    assert format_for_model("qwen2", None) == "hermes"
    assert format_for_model("llama", "{{ '<|start_header_id|>' + role }}{{ '<|eot_id|>' }}") == "llama3_json"


def test_smollm2_template_renders_the_flattened_history(smollm2_tokenizer) -> None:
    tok = smollm2_tokenizer
    fmt = get_format(format_for_model("llama", tok.chat_template))
    messages = fmt.to_template_messages(HISTORY[:3], TOOLS)
    prompt = tok.apply_chat_template(messages, tokenize=False)
    call = fmt.render_call("book_table", {"party_size": 4, "time": "19:30"})
    assert f"<|im_start|>assistant\n{call}\n" in prompt
    # The call text the grammar forces re-tokenizes to the same ids inside the rendered history.
    ids = tok(prompt, add_special_tokens=False)["input_ids"]
    call_ids = tok(call, add_special_tokens=False)["input_ids"]
    assert any(ids[i:i + len(call_ids)] == call_ids for i in range(len(ids)))
