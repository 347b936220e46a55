"""Workload sources: scripted turns, the seeded voice stream, JSONL files (good and malformed,
with messages naming file, line and field), synthetic prompts of a given token length."""

from __future__ import annotations

import itertools
import json

import pytest

from turnspec.loadtest.workload import (
    WorkloadError,
    WorkloadSpec,
    load_jsonl,
    open_source,
    script_from_messages,
    synthetic_scripts,
    voice_scripts,
)
from turnspec.workloads import export_jsonl, generate_conversations

CALL = {"id": "call_1", "type": "function",
        "function": {"name": "lookup", "arguments": '{"code":"AB12"}'}}
MESSAGES = [
    {"role": "system", "content": "You are an agent."},
    {"role": "user", "content": "Find booking AB12."},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call_1", "content": '{"status":"ok"}'},
    {"role": "assistant", "content": "Found it. Anything else?"},
    {"role": "user", "content": "No, thanks."},
]
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def test_script_turns_history_and_new_messages():
    s = script_from_messages("c1", MESSAGES, TOOLS, 32)
    assert [(t.index, t.kind) for t in s.turns] == [(2, "tool_call"), (4, "text"), (6, "open")]
    t0, t1, t2 = s.turns
    assert list(t0.history) == MESSAGES[:2] and list(t0.new) == MESSAGES[:2]
    assert list(t1.history) == MESSAGES[:4] and list(t1.new) == [MESSAGES[3]]
    assert list(t2.new) == [MESSAGES[5]] and t2.expected is None and t2.max_tokens == 32


def test_voice_stream_is_seeded_and_multi_turn():
    a = [s.id for s in itertools.islice(voice_scripts(7, 64), 3)]
    assert a == [s.id for s in itertools.islice(voice_scripts(7, 64), 3)]
    assert a == ["all-7-000000", "all-7-000001", "all-7-000002"]
    s = next(voice_scripts(0, 64))
    assert len(s.turns) > 1 and s.tools and any(t.kind == "tool_call" for t in s.turns)


def test_workload_export_is_a_valid_file(tmp_path):
    path = tmp_path / "calls.jsonl"
    export_jsonl(generate_conversations(5, seed=1), path)
    scripts, errors = load_jsonl(path, 48)
    assert errors == [] and [s.id for s in scripts] == [f"all-1-00000{i}" for i in range(5)]
    assert scripts[0].turns[0].max_tokens == 48


def test_malformed_lines_are_named_and_skipped(tmp_path):
    good = {"id": "ok", "messages": MESSAGES, "tools": TOOLS, "max_tokens": 16}
    lines = [json.dumps(good), "{not json", json.dumps({"id": "x"}),
             json.dumps({"messages": [{"role": "bot", "content": "hi"}]}),
             json.dumps({"messages": [{"role": "user", "content": "hi"},
                                      {"role": "tool", "tool_call_id": "c", "content": "{}"}]}),
             json.dumps({"messages": MESSAGES, "max_tokens": 0}), "", json.dumps([1, 2])]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    scripts, errors = load_jsonl(path, 48)
    assert [s.id for s in scripts] == ["ok"] and scripts[0].turns[0].max_tokens == 16
    assert errors == [
        f"{path}:2: not JSON (Expecting property name enclosed in double quotes: line 1 "
        "column 2 (char 1))",
        f"{path}:3: messages: expected a non-empty array of chat messages",
        f"{path}:4: messages[0].role: expected one of system, user, assistant, tool, got 'bot'",
        f"{path}:5: messages[1]: a tool message needs a tool_call_id and must follow a tool call",
        f"{path}:6: max_tokens: expected a positive integer, got 0",
        f"{path}:8: expected a JSON object, got list",
    ]


def test_spoken_words_then_a_call_are_one_turn(tmp_path):
    """An assistant line and then its tool call as two messages (the independent eval set's
    way) load as one turn holding both; two assistant texts in a row still do not load."""
    said = {"role": "assistant", "content": "One moment, let me look."}
    called = {"role": "assistant", "content": None, "tool_calls": [CALL]}
    split = [*MESSAGES[:2], said, called, *MESSAGES[3:]]
    twice = [*MESSAGES[:2], said, said, *MESSAGES[3:]]
    path = tmp_path / "calls.jsonl"
    path.write_text(json.dumps({"id": "split", "messages": split}) + "\n"
                    + json.dumps({"id": "twice", "messages": twice}) + "\n")
    scripts, errors = load_jsonl(path, 48)
    assert [s.id for s in scripts] == ["split"]
    turns = scripts[0].turns
    assert [(t.index, t.kind) for t in turns] == [(2, "tool_call"), (4, "text"), (6, "open")]
    assert turns[0].expected == {**said, "tool_calls": [CALL]}
    assert errors == [f"{path}:2: messages[3]: an assistant message (a turn) must follow a "
                      "system, user or tool message"]


def test_a_file_with_nothing_usable_raises_with_every_reason(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text("nope\n")
    with pytest.raises(WorkloadError) as e:
        open_source(WorkloadSpec.parse(str(path)), 0)
    assert e.value.errors == [f"{path}:1: not JSON (Expecting value: line 1 column 1 (char 0))"]
    with pytest.raises(WorkloadError, match="cannot read"):
        open_source(WorkloadSpec.parse(str(tmp_path / "missing.jsonl")), 0)


def test_workload_spec_parse():
    assert WorkloadSpec.parse("synthetic:128,64") == WorkloadSpec(
        "synthetic", input_tokens=128, output_tokens=64, max_tokens=64)
    assert WorkloadSpec.parse("voice", 40).max_tokens == 40
    assert WorkloadSpec.parse("x.jsonl").kind == "file"
    with pytest.raises(ValueError, match="two integers"):
        WorkloadSpec.parse("synthetic:128")
    with pytest.raises(ValueError, match="IN >= 1"):
        WorkloadSpec.parse("synthetic:0,5")


def test_synthetic_prompts_have_the_token_length(smollm2_tokenizer):
    scripts = list(itertools.islice(synthetic_scripts(smollm2_tokenizer, 100, 20, seed=2), 5))
    texts = [s.turns[0].history[0]["content"] for s in scripts]
    assert len(set(texts)) == 5 and all(s.turns[0].max_tokens == 20 for s in scripts)
    for text in texts:  # re-tokenizing the decoded cut may merge one token at the edge
        assert abs(len(smollm2_tokenizer.encode(text, add_special_tokens=False)) - 100) <= 1
    again = next(synthetic_scripts(smollm2_tokenizer, 100, 20, seed=2))
    assert again.turns[0].history[0]["content"] == texts[0]
