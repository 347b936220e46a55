"""examples/openai_sdk.py: streamed chat completions with tools, run to the end of its script."""

from __future__ import annotations

import json

from .conftest import run_example


def test_openai_sdk_script(server, tmp_path):
    out = run_example("openai_sdk.py", tmp_path, server.port, "http", "--base-url",
                      f"http://127.0.0.1:{server.port}/v1")
    turns = out["turns"]
    assert [t["forced_tool"] for t in turns] == [None, None, "get_weather", "book_table", None]
    hello, story, weather, booking, bye = (t["completions"] for t in turns)
    assert len(hello) == 1 and hello[0]["text"].strip() and not hello[0]["tool_calls"]
    assert hello[0]["timing"]["completion_tokens"] > 0 and hello[0]["finish_reason"]
    # barge-in: the stream closed after five pieces, no completion block came
    assert len(story) == 1 and story[0]["interrupted"] and story[0]["timing"] is None
    for completions, name in ((weather, "get_weather"), (booking, "book_table")):
        call, answer = completions  # the forced call, then the answer from its result
        (tc,) = call["tool_calls"]
        assert call["finish_reason"] == "tool_calls" and tc["name"] == name
        assert call["timing"]["tool_call_ms"] is not None
        assert "error" not in tc["result"], tc  # the arguments fit the tool's schema
        assert answer["text"].strip() and not answer["tool_calls"]
    assert isinstance(json.loads(weather[0]["tool_calls"][0]["arguments"])["city"], str)
    args = json.loads(booking[0]["tool_calls"][0]["arguments"])
    assert isinstance(args["name"], str) and 1 <= args["party_size"] <= 12
    assert len(bye) == 1 and bye[0]["text"].strip()
    # the conversation sent back: the cut-off words, each call and its result
    roles = [m["role"] for m in out["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant",
                     "tool", "assistant", "user", "assistant", "tool", "assistant", "user",
                     "assistant"]
    assert out["messages"][4]["content"] == story[0]["text"]
