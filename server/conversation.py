"""Conversation messages: wire shapes -> one canonical chat form, and per-connection state.

Canonical message (what `ChatTemplate.render` takes), OpenAI chat style:
  {"role": "system"|"user"|"assistant"|"tool", "content": str,
   "tool_calls": [{"id", "type": "function", "function": {"name", "arguments": str}}],  # assistant
   "tool_call_id": str}                                                                  # tool
Responses `input` items (message, function_call, function_call_output) map onto it; an
assistant's text and the function calls that follow it become one assistant message.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from turnspec.server.errors import invalid

Message = dict[str, Any]
_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
          "tool": "tool"}
_TEXT_PARTS = ("text", "input_text", "output_text")


def _role(raw: Any) -> str | None:
    """The canonical role of a client's `role` value, None when it names none (any type)."""
    return _ROLES.get(raw) if isinstance(raw, str) else None


def _text(content: Any, where: str, allow_none: bool = False) -> str:
    """A message's content as text: a string or a list of text parts."""
    if content is None and allow_none:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for j, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") not in _TEXT_PARTS:
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise invalid(f"{where}[{j}]: expected a text part ({', '.join(_TEXT_PARTS)}), "
                              f"got {kind!r}; only text input is supported", param=where)
            text = part.get("text")
            if not isinstance(text, str):
                raise invalid(f"{where}[{j}].text: expected a string", param=f"{where}[{j}].text")
            out.append(text)
        return "".join(out)
    raise invalid(f"{where}: expected a string or an array of text parts, got "
                  f"{type(content).__name__}", param=where)


def _tool_call(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict) or not isinstance(raw.get("function"), dict):
        raise invalid(f"{where}: expected {{id, type: 'function', function: {{name, arguments}}}}",
                      param=where)
    fn = raw["function"]
    name, args, call_id = fn.get("name"), fn.get("arguments", ""), raw.get("id", "")
    if not isinstance(name, str) or not name:
        raise invalid(f"{where}.function.name: expected a non-empty string",
                      param=f"{where}.function.name")
    if not isinstance(args, str):
        raise invalid(f"{where}.function.arguments: expected a JSON string",
                      param=f"{where}.function.arguments")
    if not isinstance(call_id, str):
        raise invalid(f"{where}.id: expected a string", param=f"{where}.id")
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def messages_from_chat(raw: Any, param: str = "messages") -> list[Message]:
    """Validate OpenAI chat-completions `messages` into canonical messages."""
    if not isinstance(raw, list) or not raw:
        raise invalid(f"{param}: expected a non-empty array of messages", param=param)
    out: list[Message] = []
    for i, m in enumerate(raw):
        where = f"{param}[{i}]"
        if not isinstance(m, dict):
            raise invalid(f"{where}: expected an object, got {type(m).__name__}", param=where)
        role = _role(m.get("role"))
        if role is None:
            raise invalid(f"{where}.role: expected one of {sorted(_ROLES)}, got {m.get('role')!r}",
                          param=f"{where}.role")
        msg: Message = {"role": role}
        calls = m.get("tool_calls") if role == "assistant" else None
        msg["content"] = _text(m.get("content"), f"{where}.content", allow_none=bool(calls))
        if calls is not None:
            if not isinstance(calls, list):
                raise invalid(f"{where}.tool_calls: expected an array", param=f"{where}.tool_calls")
            msg["tool_calls"] = [_tool_call(c, f"{where}.tool_calls[{j}]")
                                 for j, c in enumerate(calls)]
        if role == "tool":
            tcid = m.get("tool_call_id")
            if not isinstance(tcid, str):
                raise invalid(f"{where}.tool_call_id: expected a string",
                              param=f"{where}.tool_call_id")
            msg["tool_call_id"] = tcid
        out.append(msg)
    return out


def messages_from_responses_input(raw: Any, param: str = "input") -> list[Message]:
    """Validate Responses `input` (a string or items) into canonical messages."""
    if isinstance(raw, str):
        return [{"role": "user", "content": raw}]
    if not isinstance(raw, list):
        raise invalid(f"{param}: expected a string or an array of input items, got "
                      f"{type(raw).__name__}", param=param)
    out: list[Message] = []
    for i, item in enumerate(raw):
        where = f"{param}[{i}]"
        if not isinstance(item, dict):
            raise invalid(f"{where}: expected an object, got {type(item).__name__}", param=where)
        kind = item.get("type", "message")
        if kind == "message":
            role = _role(item.get("role"))
            if role is None or role == "tool":
                raise invalid(f"{where}.role: expected user, assistant, system or developer, "
                              f"got {item.get('role')!r}", param=f"{where}.role")
            out.append({"role": role, "content": _text(item.get("content"), f"{where}.content")})
        elif kind == "function_call":
            call = _tool_call({"id": item.get("call_id", ""), "function": {
                "name": item.get("name"), "arguments": item.get("arguments", "")}}, where)
            prev = out[-1] if out else None
            if prev is not None and prev["role"] == "assistant":
                prev.setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function_call_output":
            call_id, output = item.get("call_id"), item.get("output")
            if not isinstance(call_id, str) or not call_id:
                raise invalid(f"{where}.call_id: expected a non-empty string",
                              param=f"{where}.call_id")
            out.append({"role": "tool", "tool_call_id": call_id,
                        "content": _text(output, f"{where}.output")})
        elif kind == "reasoning":
            continue  # this server has no reasoning items to restore
        else:
            raise invalid(f"{where}.type: expected message, function_call or "
                          f"function_call_output, got {kind!r}", param=f"{where}.type")
    return out


@dataclass(slots=True, frozen=True)
class Conversation:
    """A finished turn that a later turn may continue (`previous_response_id`).

    `messages` excludes the per-request instructions; `token_ids` is the prompt plus the
    generated tokens, i.e. exactly what the engine's KV holds for this conversation.
    """

    messages: list[Message]
    token_ids: list[int]
    instructions: str | None


class ConversationStore:
    """Connection-local LRU of finished turns, like OpenAI's WebSocket mode cache."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: OrderedDict[str, Conversation] = OrderedDict()

    def get(self, response_id: str) -> Conversation | None:
        conv = self._items.get(response_id)
        if conv is not None:
            self._items.move_to_end(response_id)
        return conv

    def put(self, response_id: str, conv: Conversation) -> None:
        self._items[response_id] = conv
        self._items.move_to_end(response_id)
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)
