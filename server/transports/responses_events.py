"""Turn events -> OpenAI Responses streaming events (the shapes pipecat and the openai SDK read).

Output items: assistant text is one `message` item with one `output_text` part; every tool
call is a `function_call` item. Text deltas are formatted from a per-item string template.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from turnspec.server.events import (
    FINISH_CANCELLED,
    FINISH_ERROR,
    FINISH_LENGTH,
    TurnDone,
)
from turnspec.server.session import new_id
from turnspec.server.timing import now_us
from turnspec.server.wire import dumps
from turnspec.tools_grammar.parser import (
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallDone,
    ToolCallInvalid,
    ToolCallStarted,
)


class ResponseEmitter:
    def __init__(self, response_id: str, model: str, meta: dict[str, Any],
                 send: Callable[[str], Awaitable[None]]) -> None:
        self.response_id = response_id
        self.model = model
        self.meta = meta
        self._send = send
        self._seq = 0
        self._created_at = int(time.time())
        self.output: list[dict[str, Any]] = []  # finished items, in order
        self._msg: dict[str, Any] | None = None  # the open message item
        self._msg_text: list[str] = []
        self._delta_head = ""
        self._calls: dict[int, dict[str, Any]] = {}  # parser index -> open function_call item

    # -- framing -----------------------------------------------------------------------------

    async def _event(self, kind: str, **fields: Any) -> None:
        self._seq += 1
        await self._send(dumps({"type": kind, "sequence_number": self._seq, **fields,
                                "turnspec": {"t_us": now_us()}}))

    def response(self, status: str, done: TurnDone | None = None) -> dict[str, Any]:
        r: dict[str, Any] = {
            "id": self.response_id, "object": "response", "created_at": self._created_at,
            "status": status, "model": self.model, "output": list(self.output),
            "instructions": self.meta.get("instructions"),
            "previous_response_id": self.meta.get("previous_response_id"),
            "metadata": self.meta.get("metadata", {}), "tools": self.meta.get("tools", []),
            "tool_choice": self.meta.get("tool_choice", "auto"),
            "temperature": self.meta.get("temperature"), "top_p": self.meta.get("top_p"),
            "max_output_tokens": self.meta.get("max_output_tokens"),
            "parallel_tool_calls": True, "error": None, "incomplete_details": None,
            "usage": None,
        }
        if done is not None:
            u = done.usage
            r["usage"] = {"input_tokens": u.prompt_tokens,
                          "input_tokens_details": {"cached_tokens": u.cached_tokens},
                          "output_tokens": u.completion_tokens,
                          "output_tokens_details": {"reasoning_tokens": 0},
                          "total_tokens": u.prompt_tokens + u.completion_tokens}
            r["turnspec"] = done.turnspec
        return r

    async def created(self, text_only: bool) -> None:
        """`text_only`: no tool call can come (no tools, or tool_choice none), so the message
        item is opened now, while the engine prefills, instead of in front of the first token."""
        await self._event("response.created", response=self.response("in_progress"))
        if text_only:
            await self._open_message()

    # -- items -------------------------------------------------------------------------------

    async def _open_message(self) -> None:
        item_id = new_id("msg")
        self._msg = {"id": item_id, "type": "message", "status": "in_progress",
                     "role": "assistant", "content": []}
        self._msg_text = []
        idx = len(self.output)
        self._delta_head = (f'{{"type":"response.output_text.delta","item_id":"{item_id}",'
                            f'"output_index":{idx},"content_index":0,"logprobs":[],'
                            '"sequence_number":')
        await self._event("response.output_item.added", output_index=idx, item=self._msg)
        await self._event("response.content_part.added", item_id=item_id, output_index=idx,
                          content_index=0, part={"type": "output_text", "text": "",
                                                 "annotations": []})

    async def _close_message(self) -> None:
        msg = self._msg
        if msg is None:
            return
        self._msg = None
        idx, text = len(self.output), "".join(self._msg_text)
        part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
        await self._event("response.output_text.done", item_id=msg["id"], output_index=idx,
                          content_index=0, text=text, logprobs=[])
        await self._event("response.content_part.done", item_id=msg["id"], output_index=idx,
                          content_index=0, part=part)
        item = {**msg, "status": "completed", "content": [part]}
        self.output.append(item)
        await self._event("response.output_item.done", output_index=idx, item=item)

    async def emit(self, ev: Any) -> None:
        if isinstance(ev, TextDelta):
            if self._msg is None:
                await self._open_message()
            self._msg_text.append(ev.text)
            self._seq += 1
            await self._send(self._delta_head + str(self._seq) + ',"delta":'
                             + json.dumps(ev.text, ensure_ascii=False)
                             + ',"turnspec":{"t_us":' + str(now_us()) + "}}")
        elif isinstance(ev, ToolCallArgumentsDelta):
            item = self._calls.get(ev.index)
            if item is not None:
                item["arguments"] += ev.delta
                await self._event("response.function_call_arguments.delta", item_id=item["id"],
                                  output_index=item["_idx"], delta=ev.delta)
        elif isinstance(ev, ToolCallStarted):
            await self._close_message()
            idx = len(self.output) + len(self._calls)
            item = {"id": new_id("fc"), "type": "function_call", "status": "in_progress",
                    "call_id": ev.call_id, "name": ev.name, "arguments": "", "_idx": idx}
            self._calls[ev.index] = item
            await self._event("response.output_item.added", output_index=idx,
                              item=_public(item))
        elif isinstance(ev, ToolCallDone):
            item = self._calls.pop(ev.index, None)
            if item is None:
                return
            item.update(status="completed", arguments=ev.arguments_json, name=ev.name)
            await self._event("response.function_call_arguments.done", item_id=item["id"],
                              output_index=item["_idx"], name=ev.name,
                              arguments=ev.arguments_json)
            done_item = _public(item)
            self.output.append(done_item)
            await self._event("response.output_item.done", output_index=item["_idx"],
                              item=done_item)
        elif isinstance(ev, ToolCallInvalid):
            # A call that cannot be parsed (e.g. cut by max_output_tokens). If it was
            # announced, close it as "incomplete" with the raw text; if not, drop it: tool
            # syntax must never be spoken.
            item = self._calls.pop(ev.index, None)
            if item is not None:
                item.update(status="incomplete")
                bad = _public(item)
                self.output.append(bad)
                await self._event("response.output_item.done", output_index=item["_idx"],
                                  item=bad)

    async def prepared(self) -> None:
        """The terminal event of a warm-up (`generate: false`): completed, no output."""
        r = self.response("completed")
        r["usage"] = {"input_tokens": 0, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": 0, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": 0}
        await self._event("response.completed", response=r)

    async def finish(self, done: TurnDone) -> None:
        """Close open items and send the terminal event."""
        await self._close_message()
        if done.finish_reason == FINISH_ERROR:
            r = self.response("failed", done)
            err = done.error
            r["error"] = {"code": err.code if err else "server_error",
                          "message": err.message if err else "engine failed"}
            await self._event("response.failed", response=r)
        elif done.finish_reason in (FINISH_LENGTH, FINISH_CANCELLED):
            cancelled = done.finish_reason == FINISH_CANCELLED
            r = self.response("cancelled" if cancelled else "incomplete", done)
            r["incomplete_details"] = {"reason": "cancelled" if cancelled
                                       else "max_output_tokens"}
            await self._event("response.incomplete", response=r)
        else:
            await self._event("response.completed", response=self.response("completed", done))


def _public(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if not k.startswith("_")}
