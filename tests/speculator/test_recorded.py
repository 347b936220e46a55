"""Recorded conversations as datagen prompts: the files the server's recorder writes, read back
into one prompt per distinct assistant-turn history, held out by call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from turnspec.server.recorder import ConversationRecorder, RecorderConfig
from turnspec.speculator.datagen import conversation_key
from turnspec.speculator.recorded import read_recorded, recorded_prompt_items
from turnspec.tools_grammar.schema import parse_tools

TOOL = {"type": "function", "function": {
    "name": "find_order", "description": "Find an order by number.",
    "parameters": {"type": "object", "properties": {"number": {"type": "string"}},
                   "required": ["number"]}}}
SYSTEM = {"role": "system", "content": "You are the order line of Fern & Co. Replies are spoken."}
CALL = {"role": "assistant", "content": "", "tool_calls": [{
    "id": "call_a1", "type": "function",
    "function": {"name": "find_order", "arguments": '{"number":"W-4410"}'}}]}


def record_calls(folder: Path) -> None:
    """What a server records for two calls: a WS call of three turns (three records, each
    extending the one before) and a one-turn HTTP chat without a system message, recorded
    twice (a client retry)."""
    rec = ConversationRecorder(RecorderConfig(folder=folder, max_file_bytes=2048))
    t1 = [SYSTEM, {"role": "user", "content": "hi um where's my order, W four four one oh"}, CALL]
    t2 = t1 + [{"role": "tool", "tool_call_id": "call_a1", "content": '{"status":"shipped"}'},
               {"role": "assistant", "content": "It shipped yesterday."}]
    t3 = t2 + [{"role": "user", "content": "great thanks"},
               {"role": "assistant", "content": "You're welcome!"}]
    chat = [{"role": "user", "content": "tell me a joke about owls"},
            {"role": "assistant", "content": "Why did the owl..."}]
    for messages, tools in ((t1, [TOOL]), (t2, [TOOL]), (t3, [TOOL]), (chat, []), (chat, [])):
        assert rec.record(messages, tools, {"transport": "ws" if tools else "http"})
    rec.close()


def test_one_prompt_per_assistant_turn_held_out_by_call(smollm2_dir, tmp_path):
    from turnspec.engine.chat import ChatTemplate

    record_calls(tmp_path)
    assert len(list(tmp_path.glob("conversations-*.jsonl"))) > 1          # rotated, all read
    assert len(list(read_recorded(tmp_path))) == 5
    render = ChatTemplate.from_model_dir(smollm2_dir).render_many
    items, skipped = recorded_prompt_items(render, tmp_path, heldout_frac=0.0)
    assert skipped == 0 and {it.source for it in items} == {"recorded"}
    # the WS call: its call, its spoken reply after the result, its goodbye; the chat: once
    assert len(items) == 4 and len({it.prompt_ids for it in items}) == 4
    calls = {}
    for it in items:
        calls.setdefault(conversation_key(it.id), []).append(it)
    assert sorted(len(v) for v in calls.values()) == [1, 3]             # a call's turns share a key
    # the first turn's prompt is the call rendered as the server would: history and tools
    first = ChatTemplate.from_model_dir(smollm2_dir).render(
        [SYSTEM, {"role": "user", "content": "hi um where's my order, W four four one oh"}],
        parse_tools([TOOL]))
    assert min((it.prompt_ids for it in max(calls.values(), key=len)), key=len) == tuple(first)
    # held out by call: every turn of a call lands on the same side
    for frac in (0.3, 0.6, 0.9):
        items, _ = recorded_prompt_items(render, tmp_path, heldout_frac=frac)
        sides: dict[str, set[str]] = {}
        for it in items:
            sides.setdefault(conversation_key(it.id), set()).add(it.split)
        assert all(len(s) == 1 for s in sides.values())
    with pytest.raises(ValueError, match=r"heldout_frac: expected \[0, 1\)"):
        recorded_prompt_items(render, tmp_path, heldout_frac=1.0)


def test_a_folder_without_recordings_or_with_a_torn_line(tmp_path):
    with pytest.raises(FileNotFoundError, match="no conversations-\\*.jsonl files"):
        list(read_recorded(tmp_path))
    good = {"id": "r", "split": "train", "domain": "recorded", "scenario": "recorded.http",
            "tools": [], "messages": [SYSTEM, {"role": "user", "content": "hi"},
                                      {"role": "assistant", "content": "hello"}]}
    (tmp_path / "conversations-000001.jsonl").write_text(json.dumps(good) + "\n"
                                                         + json.dumps(good)[:40])
    assert len(list(read_recorded(tmp_path))) == 1                  # killed mid-write: skipped
    (tmp_path / "conversations-000002.jsonl").write_text('{"id": "x"\n')
    with pytest.raises(ValueError, match="conversations-000002.jsonl:1: expected one JSON record"):
        list(read_recorded(tmp_path))
    (tmp_path / "conversations-000002.jsonl").write_text('{"id": "x", "messages": "hi"}\n')
    with pytest.raises(ValueError, match="conversations-000002.jsonl:1: expected a workload"):
        list(read_recorded(tmp_path))
