"""Wire messages -> canonical chat messages, and the per-connection conversation store."""

from __future__ import annotations

import pytest

from turnspec.server.conversation import (
    Conversation,
    ConversationStore,
    messages_from_chat,
    messages_from_responses_input,
)
from turnspec.server.errors import ApiError


def test_chat_messages_are_normalized():
    out = messages_from_chat([
        {"role": "developer", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "f", "arguments": "{\"x\":1}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
    ])
    assert out == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "ab"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"x\":1}"}}]},
        {"role": "tool", "content": "42", "tool_call_id": "c1"},
    ]


@pytest.mark.parametrize("raw,param", [
    ([], "messages"),
    ("hi", "messages"),
    ([{"role": "robot", "content": "x"}], "messages[0].role"),
    ([{"role": "user", "content": 5}], "messages[0].content"),
    ([{"role": "user", "content": [{"type": "image_url"}]}], "messages[0].content"),
    ([{"role": "tool", "content": "x"}], "messages[0].tool_call_id"),
    ([{"role": "assistant", "tool_calls": [{"function": {"name": "", "arguments": ""}}]}],
     "messages[0].tool_calls[0].function.name"),
    ([{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {}}}]}],
     "messages[0].tool_calls[0].function.arguments"),
])
def test_chat_message_errors_name_the_field(raw, param):
    with pytest.raises(ApiError) as info:
        messages_from_chat(raw)
    assert info.value.status == 400 and info.value.param == param


def test_responses_input_items():
    assert messages_from_responses_input("hi") == [{"role": "user", "content": "hi"}]
    out = messages_from_responses_input([
        {"role": "developer", "content": "sys"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]},
        {"role": "assistant", "content": [{"type": "output_text", "text": "let me check"}]},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "1"},
        {"type": "reasoning", "id": "r1", "summary": []},
        {"type": "function_call", "call_id": "c3", "name": "h", "arguments": "{}"},
    ])
    assert [m["role"] for m in out] == ["system", "user", "assistant", "tool", "assistant"]
    assert out[2]["content"] == "let me check"
    assert [c["id"] for c in out[2]["tool_calls"]] == ["c1", "c2"]
    assert out[3] == {"role": "tool", "tool_call_id": "c1", "content": "1"}
    assert out[4]["content"] == "" and out[4]["tool_calls"][0]["function"]["name"] == "h"


@pytest.mark.parametrize("raw,param", [
    (7, "input"),
    ([{"type": "input_image", "image_url": "x"}], "input[0].type"),
    ([{"role": "tool", "content": "x"}], "input[0].role"),
    ([{"type": "function_call_output", "output": "x"}], "input[0].call_id"),
    ([{"type": "function_call", "call_id": "c", "name": 3}], "input[0].function.name"),
])
def test_responses_input_errors(raw, param):
    with pytest.raises(ApiError) as info:
        messages_from_responses_input(raw)
    assert info.value.param == param


def test_store_is_lru():
    store = ConversationStore(2)
    conv = Conversation([{"role": "user", "content": "x"}], [1, 2], None)
    store.put("a", conv)
    store.put("b", conv)
    assert store.get("a") is conv  # touch a: b is now the oldest
    store.put("c", conv)
    assert store.get("b") is None and store.get("a") is conv and store.get("c") is conv
    assert len(store) == 2
