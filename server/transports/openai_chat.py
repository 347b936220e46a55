"""OpenAI Chat Completions wire format: request body -> `TurnRequest`, events -> chunks.

Streaming chunks are built from per-request string templates, so a token costs one
`json.dumps` of its text (no dict building or pretty-printing on the hot path).
"""

from __future__ import annotations

import json
import time
from typing import Any

from turnspec.server.conversation import messages_from_chat
from turnspec.server.errors import invalid
from turnspec.server.events import CallRecord, TurnDone
from turnspec.server.session import TurnRequest
from turnspec.server.timing import now_us
from turnspec.server.wire import (
    dumps,
    opt_bool,
    opt_dict,
    opt_int,
    opt_list,
    opt_number,
    opt_stop,
    opt_str,
)

MAX_TOKENS_LIMIT = 1 << 20


def parse_chat_request(body: dict[str, Any], received_unix_ms: float,
                       received_perf: float) -> tuple[TurnRequest, bool, bool]:
    """Returns (turn request, stream, include_usage). Unknown fields are ignored."""
    opt_str(body, "model")
    stream = opt_bool(body, "stream", False)
    stream_options = opt_dict(body, "stream_options") or {}
    include_usage = opt_bool(stream_options, "include_usage", False, prefix="stream_options.")
    n = opt_int(body, "n", 1, 128)
    if n not in (None, 1):
        raise invalid(f"n: only n=1 is supported, got {n}", param="n")
    max_tokens = opt_int(body, "max_completion_tokens", 1, MAX_TOKENS_LIMIT)
    if max_tokens is None:
        max_tokens = opt_int(body, "max_tokens", 1, MAX_TOKENS_LIMIT)
    req = TurnRequest(
        messages=messages_from_chat(body.get("messages")),
        tools=opt_list(body, "tools"),
        tool_choice=body.get("tool_choice"),
        temperature=opt_number(body, "temperature", 0.0, 2.0),
        top_p=opt_number(body, "top_p", 1e-9, 1.0),
        top_k=opt_int(body, "top_k", 0, 1 << 20),
        seed=opt_int(body, "seed", -(1 << 63), (1 << 63) - 1),
        max_tokens=max_tokens,
        stop=opt_stop(body),
        request_id=opt_str(body, "request_id"),
        spec_block_size=opt_int(body, "spec_block_size", 0, 256),
        # turnspec extension: "loop_guard": false turns the server's loop guard off for this turn
        loop_guard=opt_bool(body, "loop_guard", True) if body.get("loop_guard") is not None else None,
        received_unix_ms=received_unix_ms,
        received_perf=received_perf,
    )
    if req.tool_choice is not None and not isinstance(req.tool_choice, (str, dict)):
        raise invalid("tool_choice: expected 'auto', 'none', 'required' or "
                      "{type: 'function', function: {name}}", param="tool_choice")
    return req, stream, include_usage


def usage_dict(done: TurnDone) -> dict[str, Any]:
    u = done.usage
    return {"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens,
            "total_tokens": u.prompt_tokens + u.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": u.cached_tokens}}


def _calls_json(calls: list[CallRecord]) -> list[dict[str, Any]]:
    return [{"id": c.call_id, "type": "function",
             "function": {"name": c.name, "arguments": c.arguments_json}} for c in calls]


def completion_body(chat_id: str, model: str, done: TurnDone) -> dict[str, Any]:
    """The non-streaming `chat.completion` object."""
    message: dict[str, Any] = {"role": "assistant", "content": done.text or None}
    if done.tool_calls:
        message["tool_calls"] = _calls_json(done.tool_calls)
    return {"id": chat_id, "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": message,
                                         "finish_reason": done.finish_reason,
                                         "logprobs": None}],
            "usage": usage_dict(done), "turnspec": done.turnspec}


class ChunkWriter:
    """SSE `chat.completion.chunk` frames for one streamed completion; each carries
    `turnspec.t_us`, the server's wall clock (µs) when it was built."""

    def __init__(self, chat_id: str, model: str) -> None:
        head = (f'{{"id":{json.dumps(chat_id)},"object":"chat.completion.chunk",'
                f'"created":{int(time.time())},"model":{json.dumps(model)},')
        self._head = "data: " + head
        self._delta = self._head + '"choices":[{"index":0,"delta":'
        self._args_sent: dict[int, str] = {}

    @staticmethod
    def _tail() -> str:
        return ',"finish_reason":null}],"turnspec":{"t_us":' + str(now_us()) + "}}\n\n"

    def role(self) -> str:
        return self._delta + '{"role":"assistant","content":""}' + self._tail()

    def text(self, text: str) -> str:
        return self._delta + '{"content":' + json.dumps(text, ensure_ascii=False) + "}" \
            + self._tail()

    def call_started(self, index: int, call_id: str, name: str) -> str:
        self._args_sent[index] = ""
        call = {"index": index, "id": call_id, "type": "function",
                "function": {"name": name, "arguments": ""}}
        return self._delta + '{"tool_calls":[' + dumps(call) + "]}" + self._tail()

    def call_args(self, index: int, delta: str) -> str:
        self._args_sent[index] = self._args_sent.get(index, "") + delta
        return (self._delta + '{"tool_calls":[{"index":' + str(index)
                + ',"function":{"arguments":' + json.dumps(delta, ensure_ascii=False)
                + "}}]}" + self._tail())

    def call_done(self, index: int, arguments_json: str) -> str | None:
        """Send whatever part of the final arguments was not streamed (usually nothing)."""
        sent = self._args_sent.get(index, "")
        if arguments_json == sent or not arguments_json.startswith(sent):
            return None
        return self.call_args(index, arguments_json[len(sent):])

    def finish(self, done: TurnDone, include_usage: bool) -> str:
        t_us = now_us()
        out = (self._head + '"choices":[{"index":0,"delta":{},"finish_reason":'
               + json.dumps(done.finish_reason) + '}],"turnspec":'
               + dumps({**done.turnspec, "t_us": t_us}) + "}\n\n")
        if include_usage:  # same write as the chunk above, so no timestamp of its own: the
            # last chunk with a `turnspec` stays the one with the completion block
            out += self._head + '"choices":[],"usage":' + dumps(usage_dict(done)) + "}\n\n"
        return out + "data: [DONE]\n\n"
