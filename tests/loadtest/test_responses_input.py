"""What a WebSocket turn sends: the first turn's full history, continuations with the scripted
messages since the last turn (tool results answering the model's own call), resyncs."""

from __future__ import annotations

from turnspec.loadtest.record import RequestRecord
from turnspec.loadtest.responses_input import responses_items, responses_tools, ws_turn_input
from turnspec.loadtest.workload import script_from_messages

from .test_workload import MESSAGES, TOOLS

SCRIPT = script_from_messages("c1", MESSAGES, TOOLS, 32)


def reply(ok: bool = True, calls: list | None = None, cancelled: bool = False) -> RequestRecord:
    r = RequestRecord("ws", ok=ok, response_id="resp_1", tool_calls=calls or [])
    if cancelled:
        r.cancel_ms = 1.0
    return r


def test_items_and_tools():
    assert responses_items(MESSAGES[:4]) == [
        {"type": "message", "role": "system", "content": "You are an agent."},
        {"type": "message", "role": "user", "content": "Find booking AB12."},
        {"type": "function_call", "call_id": "call_1", "name": "lookup",
         "arguments": '{"code":"AB12"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": '{"status":"ok"}'}]
    assert responses_tools(TOOLS) == [{"type": "function", "name": "lookup",
                                       "parameters": {"type": "object"}}]


def test_first_turn_sends_the_history():
    items, prev_id, resync = ws_turn_input(SCRIPT.turns[0], None, None)
    assert items == responses_items(MESSAGES[:2]) and prev_id is None and not resync


def test_the_scripted_tool_result_answers_the_models_call():
    model_call = [{"call_id": "call_model_9", "name": "lookup", "arguments": "{}"}]
    items, prev_id, resync = ws_turn_input(SCRIPT.turns[1], SCRIPT.turns[0], reply(calls=model_call))
    assert items == [{"type": "function_call_output", "call_id": "call_model_9",
                      "output": '{"status":"ok"}'}]
    assert prev_id == "resp_1" and not resync


def test_a_text_turn_continues_with_the_user_message():
    items, prev_id, resync = ws_turn_input(SCRIPT.turns[2], SCRIPT.turns[1], reply())
    assert items == [{"type": "message", "role": "user", "content": "No, thanks."}]
    assert prev_id == "resp_1" and not resync


def test_divergence_failure_or_barge_in_resyncs_with_the_scripted_history():
    for prev in (reply(), reply(ok=False), reply(calls=[{"call_id": "x"}], cancelled=True)):
        items, prev_id, resync = ws_turn_input(SCRIPT.turns[1], SCRIPT.turns[0], prev)
        assert items == responses_items(MESSAGES[:4]) and prev_id is None and resync
    items, _, resync = ws_turn_input(SCRIPT.turns[2], SCRIPT.turns[1],
                                     reply(calls=[{"call_id": "x"}]))  # spoke in the script
    assert resync and items == responses_items(MESSAGES[:6])
