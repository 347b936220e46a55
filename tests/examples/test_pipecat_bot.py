"""examples/pipecat_bot.py: a real pipecat pipeline over WebSocket (OpenAIResponsesLLMService)
and over HTTP (OpenAILLMService, --http), its two function handlers, its barge-in, and the
latency it prints: pipecat's TTFB and first sentence beside the server's timing block."""

from __future__ import annotations

import pytest

from .conftest import run_example


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_pipecat_bot_script(server, tmp_path, transport):
    args = ["--url", f"ws://127.0.0.1:{server.port}/v1/responses"] if transport == "ws" \
        else ["--http", f"http://127.0.0.1:{server.port}/v1"]
    out = run_example("pipecat_bot.py", tmp_path, server.port, transport, *args)
    assert out["service"] == ("TurnspecResponses" if transport == "ws" else "TurnspecChat")
    assert out["errors"] == []
    hello, story, weather, booking, bye = (t["replies"] for t in out["turns"])
    (r,) = hello
    assert r["text"].strip() and not r["tool_calls"] and not r["interrupted"]
    assert r["ttfb_ms"] > 0 and r["first_sentence_ms"] >= r["ttfb_ms"]  # pipecat's metrics
    timing = r["turnspec"]["timing"]  # the server's block, kept by the service subclass
    assert timing["completion_tokens"] > 0 and timing["ttfs_ms"] >= timing["server_ttft_ms"]
    (cut,) = story  # barge-in: pipecat's InterruptionFrame, the server cancelled the turn
    assert cut["interrupted"] and cut["text"].strip()
    for replies, name in ((weather, "get_weather"), (booking, "book_table")):
        call, answer = replies  # the handler ran, pipecat sent its result and asked again
        assert call["tool_calls"] == [name] and call["turnspec"]["timing"]["tool_call_ms"]
        assert answer["text"].strip() and not answer["tool_calls"]
        assert answer["turnspec"]["timing"]["completion_tokens"] > 0
    (r,) = bye
    assert r["text"].strip()
    roles = [m["role"] for m in out["context"]]
    assert roles.count("tool") == 2 and roles[-1] == "assistant"
    results = [m["content"] for m in out["context"] if m["role"] == "tool"]
    assert '"conditions"' in results[0] and '"confirmation"' in results[1]
