"""scripts/analysis/voice_answers_probe.py: which turns it sends and what it refuses."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location(
    "voice_answers_probe", ROOT / "scripts/analysis/voice_answers_probe.py")
probe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(probe)
VOICE = ROOT / "speculator/eval/voice.jsonl"


def test_turns_are_a_spread_with_the_messages_before_each() -> None:
    every = probe.voice_turns(VOICE, 1)  # one turn: the very first
    assert every[0]["messages"][-1]["role"] == "user" and every[0]["tools"]
    n_all = sum(m["role"] == "assistant" for line in VOICE.read_text().splitlines()
                for m in json.loads(line)["messages"])
    turns = probe.voice_turns(VOICE, 50)
    assert len(turns) == 50 and len({t["id"] for t in turns}) == 50
    assert len({t["id"].split("#")[0] for t in turns}) > 10  # spread over many calls
    whole = probe.voice_turns(VOICE, n_all)
    assert sum(t["written"] == "tool call" for t in whole) == sum(
        bool(m.get("tool_calls")) for line in VOICE.read_text().splitlines()
        for m in json.loads(line)["messages"])
    for t in whole:
        assert t["messages"][0]["role"] == "system"
        assert int(t["id"].split("#")[1]) == len(t["messages"])  # everything before the turn
    with pytest.raises(SystemExit, match=f"expected 1..{n_all}"):
        probe.voice_turns(VOICE, n_all + 1)


def test_server_spec_is_name_and_url() -> None:
    assert probe.parse_server("head=http://127.0.0.1:8000/v1") == ("head", "http://127.0.0.1:8000/v1")
    for bad in ("http://127.0.0.1:8000/v1", "head=127.0.0.1:8000", "=http://x"):
        with pytest.raises(SystemExit, match="expected NAME=URL"):
            probe.parse_server(bad)


def test_served_acceptance_comes_from_the_servers_metrics(smollm2_dir, tmp_path, monkeypatch,
                                                          capsys) -> None:
    """Two voice turns through a real turnspec server speculating with the default drafter:
    the probe reads its verify steps and output tokens from /metrics; a URL with no server
    there has none."""
    import sys

    from turnspec.engine.local import LocalEngine, LocalEngineConfig
    from turnspec.server.config import ServerConfig
    from turnspec.server.testing import ThreadedServer

    engine = LocalEngine(LocalEngineConfig(model_dir=str(smollm2_dir), max_batch=4, max_context=2048,
                                           kv_memory_gb=0.25, speculator="default"))
    server = ThreadedServer(engine, ServerConfig(host="127.0.0.1", port=0, grpc_port=None)).start()
    try:
        url = f"http://127.0.0.1:{server.port}/v1"
        out = tmp_path / "probe.json"
        monkeypatch.setattr(sys, "argv", ["probe", "--server", f"spec={url}", "--turns", "2",
                                          "--max-tokens", "12", "--json", str(out)])
        assert probe.main() == 0
        result = json.loads(out.read_text())
        m = result["served"]["spec"]
        assert len(result["answers"]["spec"]) == 2 and 2 <= m["output_tokens"] <= 24
        assert m["verify_steps"] >= 1 and m["accepted"] >= m["verify_steps"]  # each commits >= 1
        assert m["per_step"] == m["accepted"] / m["verify_steps"]
        assert "accepted per verify step" in capsys.readouterr().out
    finally:
        server.stop()  # and the engine
    assert probe.served(url) is None  # the server is gone: no counters, not zeros
