"""Conversation recording (`turnspec serve --record-conversations`): a real server on
127.0.0.1 with the real SmolLM2 engine writes each finished turn of a WS conversation, an HTTP
chat and a gRPC turn as a workload record (messages, tools, the reply), rotates files at a
small size, redacts what it is told to, never writes the API key, and writes nothing at all
without the flag; `speculator datagen --from-conversations` answers what it wrote. The writer
itself: rotation by size and count, and a full queue that drops instead of blocking."""

from __future__ import annotations

import argparse
import json
import logging
import threading
import time
from pathlib import Path

import aiohttp
import pytest

from turnspec.cli import serve as serve_cli
from turnspec.cli import speculator as speculator_cli
from turnspec.loadtest.clients import ResponsesSocketClient
from turnspec.loadtest.grpc_client import GenerationClient
from turnspec.server.recorder import ConversationRecorder, RecorderConfig
from turnspec.workloads import Conversation

from .srv_helpers import WEATHER_TOOL, WEATHER_TOOL_FLAT, start_server

KEY = "sk-recorder-test-4f9c2e"
PHONE = r"\b\d{3}[- ]\d{4}\b"
MAX_FILE = 2048  # bytes: every record here is 0.6-1.5 kB, so the server's files rotate


def _records(folder: Path) -> list[dict]:
    return [json.loads(line) for p in sorted(folder.glob("conversations-*.jsonl"))
            for line in p.read_text().splitlines()]


def _wait_records(folder: Path, n: int, timeout: float = 10.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while len(recs := _records(folder)) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    return recs


@pytest.fixture(scope="module")
def recorded(local_engine, tmp_path_factory):
    folder = tmp_path_factory.mktemp("recorded")
    srv = start_server(local_engine, api_key=KEY,
                       record=RecorderConfig(folder=folder, redact=(PHONE,),
                                             max_file_bytes=MAX_FILE))
    yield srv, folder
    srv.stop()


async def test_ws_conversation_is_recorded_turn_by_turn(recorded):
    srv, folder = recorded
    before = len(_records(folder))
    ws = await ResponsesSocketClient(f"ws://127.0.0.1:{srv.port}/v1/responses",
                                     api_key=KEY).connect()
    try:
        r1 = await ws.create([{"role": "user", "content": "What's the weather in Paris? "
                               "Call me back on 555-0142."}],
                             instructions="You are a weather bot.", tools=[WEATHER_TOOL_FLAT],
                             tool_choice="required", max_output_tokens=40)
        assert r1.ok and r1.tool_calls, r1.error
        call = r1.tool_calls[0]
        r2 = await ws.create([{"type": "function_call_output", "call_id": call["call_id"],
                               "output": json.dumps({"city": "Paris", "temp_c": 21})}],
                             previous_response_id=r1.response_id, tools=[WEATHER_TOOL_FLAT],
                             tool_choice="none", instructions="You are a weather bot.",
                             max_output_tokens=12)
        assert r2.ok, r2.error
    finally:
        await ws.close()
    recs = _wait_records(folder, before + 2)[before:]
    assert [r["turnspec"]["response_id"] for r in recs] == [r1.response_id, r2.response_id]
    first, second = (r["messages"] for r in recs)
    assert first[0] == {"role": "system", "content": "You are a weather bot."}
    assert first[1]["content"] == "What's the weather in Paris? Call me back on [redacted]."
    assert first[2]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert json.loads(first[2]["tool_calls"][0]["function"]["arguments"]) == \
        json.loads(call["arguments"])
    assert second[:3] == first[:3]                            # the second turn extends the first
    assert second[3] == {"role": "tool", "tool_call_id": call["call_id"],
                         "content": '{"city": "Paris", "temp_c": 21}'}
    assert second[4] == {"role": "assistant", "content": r2.text}
    for r in recs:
        assert r["tools"] == [WEATHER_TOOL] and r["turnspec"]["transport"] == "ws"
        assert Conversation.from_record(r).messages == r["messages"]   # the workload schema


async def test_http_turn_is_recorded_with_arguments_redacted(recorded):
    srv, folder = recorded
    before = len(_records(folder))
    body = {"model": "any", "max_tokens": 40, "tools": [WEATHER_TOOL],
            "messages": [
                {"role": "system", "content": "Look up weather."},
                {"role": "user", "content": "weather for 555 0199 street? my key is " + KEY},
                {"role": "assistant", "content": None, "tool_calls": [{
                    "id": "call_1", "type": "function", "function": {
                        "name": "get_weather", "arguments": '{"city":"Zip 555-0123"}'}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c":9}'},
                {"role": "user", "content": "and is that cold?"}]}
    async with aiohttp.ClientSession() as s, s.post(
            f"http://127.0.0.1:{srv.port}/v1/chat/completions", json=body,
            headers={"Authorization": f"Bearer {KEY}"}) as resp:
        assert resp.status == 200
        reply = (await resp.json())["choices"][0]["message"]
    (rec,) = _wait_records(folder, before + 1)[before:]
    m = rec["messages"]
    assert rec["turnspec"]["transport"] == "http" and rec["tools"] == [WEATHER_TOOL]
    assert m[1]["content"] == "weather for [redacted] street? my key is [redacted]"
    assert m[2]["tool_calls"][0]["function"]["arguments"] == '{"city":"Zip [redacted]"}'
    assert m[-1]["role"] == "assistant" and m[-1]["content"] == (reply["content"] or "")
    assert len(m) == len(body["messages"]) + 1


async def test_grpc_turn_is_recorded(recorded):
    srv, folder = recorded
    before = len(_records(folder))
    client = GenerationClient(f"127.0.0.1:{srv.grpc_port}", api_key=KEY)
    try:
        r = await client.generate([{"role": "system", "content": "Weather desk."},
                                   {"role": "user", "content": "Oslo please, I'm on 555-0100"}],
                                  tools=[WEATHER_TOOL], tool_choice="get_weather", max_tokens=40)
    finally:
        await client.close()
    assert r.ok and r.finish_reason == "tool_calls", r.error
    (rec,) = _wait_records(folder, before + 1)[before:]
    assert rec["turnspec"]["transport"] == "grpc" and rec["tools"] == [WEATHER_TOOL]
    assert rec["messages"][:2] == [{"role": "system", "content": "Weather desk."},
                                   {"role": "user", "content": "Oslo please, I'm on [redacted]"}]
    (call,) = rec["messages"][2]["tool_calls"]
    assert call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == json.loads(r.tool_calls[0]["arguments"])


def test_files_rotate_and_never_hold_the_api_key(recorded):
    srv, folder = recorded
    files = sorted(folder.glob("conversations-*.jsonl"))
    assert len(files) >= 2 and sorted(folder.iterdir()) == files     # rotated; nothing else
    for p in files:
        text = p.read_text()
        lines = text.splitlines()
        assert p.stat().st_size <= MAX_FILE or len(lines) == 1       # over the size: a new file
        assert p.stat().st_mode & 0o077 == 0                         # the server's user only
        assert KEY not in text
    recs, deadline = _records(folder), time.monotonic() + 10.0
    while srv.hub.recorder.written < len(recs) and time.monotonic() < deadline:
        time.sleep(0.01)  # the writer thread counts a line just after flushing it
    assert len(recs) == srv.hub.recorder.written >= 4
    assert srv.hub.recorder.dropped == srv.hub.recorder.failed == 0


def test_datagen_answers_what_the_server_recorded(recorded, smollm2_dir, tmp_path, capsys):
    """`speculator datagen --from-conversations` on the files above: one sample per distinct
    assistant-turn history, the target's own answer after the redacted prompt."""
    from transformers import AutoTokenizer

    _, folder = recorded
    recs = _records(folder)
    histories = {json.dumps([r["tools"], r["messages"][:i]]) for r in recs
                 for i, m in enumerate(r["messages"]) if i and m["role"] == "assistant"}
    out = tmp_path / "data"
    parser = argparse.ArgumentParser()
    speculator_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args([
        "speculator", "datagen", "--from-conversations", str(folder), "--out", str(out),
        "--model", str(smollm2_dir), "--max-new-tokens", "6", "--speculator", "none",
        "--device", "cpu", "--max-context", "1024", "--kv-memory-gb", "0.25",
        "--no-progress"])
    assert args.func(args) == 0
    stats = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    samples = [json.loads(line) for line in (out / "samples.jsonl").open()]
    assert stats["written"] == len(samples) == len(histories) >= 4
    assert {s["source"] for s in samples} == {"recorded"}
    assert {s["split"] for s in samples} <= {"train", "heldout"}
    tok = AutoTokenizer.from_pretrained(smollm2_dir)
    texts = [tok.decode(s["input_ids"]) for s in samples]
    assert any("Call me back on [redacted]." in t for t in texts) and not any(KEY in t for t in texts)
    assert all(0 < sum(s["loss_mask"]) <= 6 for s in samples)      # the target's answer only
    meta = json.loads((out / "meta.json").read_text())
    assert meta["prompt_source"] == "recorded" and meta["from_conversations"] == str(folder)
    assert meta["prompt_parts"] == 1 and meta["prompts"] == len(samples)


async def test_nothing_is_written_without_the_flag(local_engine, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = argparse.ArgumentParser()
    serve_cli.register(p.add_subparsers(dest="command"))
    assert serve_cli.server_config_from_args(p.parse_args(["serve"])).record is None
    srv = start_server(local_engine)
    try:
        assert srv.hub.recorder is None
        async with aiohttp.ClientSession() as s, s.post(
                f"http://127.0.0.1:{srv.port}/v1/chat/completions",
                json={"model": "any", "max_tokens": 2,
                      "messages": [{"role": "user", "content": "hi"}]}) as resp:
            assert resp.status == 200
    finally:
        srv.stop()
    assert list(tmp_path.rglob("*")) == []
    args = p.parse_args(["serve", "--record-conversations", str(tmp_path / "rec"),
                         "--record-max-files", "3"])
    cfg = serve_cli.server_config_from_args(args).record
    assert cfg is not None and cfg.folder == tmp_path / "rec" and cfg.max_files == 3
    (tmp_path / "redact.txt").write_text("# phone numbers\n\\d{3}-\\d{4}\n[unclosed\n")
    bad = p.parse_args(["serve", "--record-conversations", "x", "--record-redact",
                        str(tmp_path / "redact.txt")])
    with pytest.raises(ValueError, match=r"redact\[1\] '\[unclosed': not a valid regular"):
        serve_cli.server_config_from_args(bad)


def _turn(i: int) -> tuple[list[dict], list[dict], dict]:
    return ([{"role": "system", "content": "s"}, {"role": "user", "content": f"turn {i:02d} " + "x" * 150},
             {"role": "assistant", "content": "ok"}], [], {"transport": "ws"})


def test_files_rotate_by_size_and_count(tmp_path):
    rec = ConversationRecorder(RecorderConfig(folder=tmp_path, max_file_bytes=1024, max_files=3))
    size = len(rec.line(*_turn(0)).encode())
    assert 2 * size <= 1024 < 3 * size                               # two turns fit a file
    for i in range(12):
        assert rec.record(*_turn(i))
    rec.close()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["conversations-000004.jsonl", "conversations-000005.jsonl",
                     "conversations-000006.jsonl"]                  # 2 turns a file, 3 kept
    assert [r["messages"][1]["content"].split()[1] for r in _records(tmp_path)] == \
        [f"{i:02d}" for i in range(6, 12)]
    again = ConversationRecorder(RecorderConfig(folder=tmp_path, max_file_bytes=1024))
    again.record(*_turn(99))
    again.close()                                   # a restart continues the numbering
    assert (tmp_path / "conversations-000007.jsonl").is_file()


def test_a_full_queue_drops_with_a_warning_instead_of_blocking(tmp_path, caplog):
    rec = ConversationRecorder(RecorderConfig(folder=tmp_path, queue_size=2))
    gate = threading.Event()
    write = rec._write
    rec._write = lambda line: (gate.wait(10), write(line))  # a disk that stalls
    caplog.set_level(logging.WARNING, logger="turnspec.server")
    t0 = time.perf_counter()
    accepted = [rec.record(*_turn(i)) for i in range(6)]
    assert time.perf_counter() - t0 < 0.5                 # record() never waits on the disk
    assert accepted[:2] == [True, True] and accepted.count(False) >= 3 and rec.dropped >= 3
    assert "queue full" in caplog.text
    gate.set()
    rec.close()
    assert rec.written == accepted.count(True) == len(_records(tmp_path))
