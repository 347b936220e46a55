"""examples/orchestrator_grpc.py: the gRPC agent loop, its tools and its barge-in (Abort)."""

from __future__ import annotations

import json

from .conftest import run_example


def test_orchestrator_grpc_script(server, tmp_path):
    out = run_example("orchestrator_grpc.py", tmp_path, server.port, "grpc", "--target",
                      f"127.0.0.1:{server.grpc_port}")
    turns = out["turns"]
    assert [t["barge_in"] for t in turns] == [False, True, False, False, False]
    hello, story, weather, booking, bye = (t["completions"] for t in turns)
    assert len(hello) == 1 and hello[0]["text"].strip() and not hello[0]["tool_calls"]
    assert hello[0]["finish_reason"] in ("stop", "length")
    assert int(hello[0]["timing"]["completion_tokens"]) > 0
    # barge-in: Abort stopped the stream, which still ended with its `complete`
    (cut,) = story
    assert cut["aborted"] and cut["finish_reason"] == "cancelled" and cut["text"].strip()
    assert int(cut["timing"]["completion_tokens"]) < 48
    for completions, name in ((weather, "get_weather"), (booking, "book_table")):
        call, answer = completions
        (tc,) = call["tool_calls"]
        assert call["finish_reason"] == "tool_calls" and tc["name"] == name
        assert "error" not in tc["result"], tc
        assert answer["text"].strip() and not answer["tool_calls"]
    assert isinstance(json.loads(weather[0]["tool_calls"][0]["arguments"])["city"], str)
    args = json.loads(booking[0]["tool_calls"][0]["arguments"])
    assert isinstance(args["name"], str) and 1 <= args["party_size"] <= 12
    assert weather[0]["tool_calls"][0]["result"]["city"] == \
        json.loads(weather[0]["tool_calls"][0]["arguments"])["city"]
    assert len(bye) == 1 and bye[0]["text"].strip()
