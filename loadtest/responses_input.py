"""Chat messages -> Responses `input` items, and what a WebSocket turn sends.

A WS conversation continues with `previous_response_id`: the server's history then holds the
model's actual replies, as a voice pipeline's would, and each turn sends only the scripted
messages since the previous turn (a user message, or the scripted tool result answering the
model's actual call: its `call_id` is rewritten to the model's). When the model's reply
differs in kind from the script (a call where the script spoke, or the reverse), or the
previous turn failed or was cut by a barge-in, the turn resyncs: it sends the whole scripted
history without `previous_response_id`, so every conversation stays on its script.
"""

from __future__ import annotations

from typing import Any

from turnspec.loadtest.record import RequestRecord
from turnspec.loadtest.workload import ScriptTurn


def responses_items(messages: tuple[dict[str, Any], ...] | list[dict[str, Any]],
                    call_ids: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Chat messages as Responses input items; `call_ids` maps scripted tool-call ids to the
    ones to send (the model's) in `function_call_output` items."""
    items: list[dict[str, Any]] = []
    for m in messages:
        role = m["role"]
        if role == "tool":
            call_id = m.get("tool_call_id", "")
            items.append({"type": "function_call_output",
                          "call_id": (call_ids or {}).get(call_id, call_id),
                          "output": m.get("content") or ""})
        elif role == "assistant":
            if m.get("content"):
                items.append({"type": "message", "role": "assistant", "content": m["content"]})
            for c in m.get("tool_calls") or ():
                fn = c["function"]
                items.append({"type": "function_call", "call_id": c.get("id", ""),
                              "name": fn["name"], "arguments": fn.get("arguments", "")})
        else:
            items.append({"type": "message", "role": role, "content": m.get("content") or ""})
    return items


def responses_tools(tools: tuple[dict[str, Any], ...] | list[dict[str, Any]]
                    ) -> list[dict[str, Any]]:
    """Chat Completions tools -> Responses tools (the function's fields at the top level)."""
    return [{"type": "function", **t.get("function", t)} for t in tools]


def ws_turn_input(turn: ScriptTurn, prev_turn: ScriptTurn | None,
                  prev: RequestRecord | None) -> tuple[list[dict[str, Any]], str | None, bool]:
    """(input items, previous_response_id, resync) for `turn` on a WS connection whose last
    turn was `prev_turn` with result `prev` (None: the conversation's first turn)."""
    if prev_turn is None:
        return responses_items(turn.history), None, False
    model_called = bool(prev is not None and prev.tool_calls)
    if (prev is not None and prev.ok and not prev.cancelled and prev.response_id
            and model_called == (prev_turn.kind == "tool_call")):
        call_ids = None
        if model_called:
            assert prev is not None and prev_turn.expected is not None
            scripted = [c.get("id", "") for c in prev_turn.expected.get("tool_calls") or ()]
            actual = [c["call_id"] for c in prev.tool_calls]
            call_ids = {s: actual[min(i, len(actual) - 1)] for i, s in enumerate(scripted)}
        return responses_items(turn.new, call_ids), prev.response_id, False
    return responses_items(turn.history), None, True
