"""What a tool-call format is, and the parts every JSON-call format shares.

A format answers three questions for one model family: how the tools are described in the
prompt, how a call looks in the model's output (which the grammar then forces), and how an
OpenAI-style history (assistant tool_calls, role=tool results) is flattened into plain
role/content messages that the model's chat template can render.

The call text is always `call_prefix(name) + <compact JSON arguments> + call_suffix`, so the
grammar (tools_grammar/grammar.py) and the renderer agree byte for byte, and a history that
contains the model's own calls re-renders token-identically.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from turnspec.tools_grammar.schema import ToolSpec


def compact_json(value: Any) -> str:
    """The JSON spelling the grammar forces: no spaces, non-ASCII kept as is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def message_text(content: Any) -> str:
    """OpenAI message content (str, None, or a list of text parts) as plain text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                raise ValueError(f"message content part: expected a text part, got {part!r}")
        return "".join(parts)
    raise ValueError(f"message content: expected a string or a list of text parts, got {type(content).__name__}")


@runtime_checkable
class ToolCallFormat(Protocol):
    """One model family's tool-call convention (see module docstring)."""

    name: str
    call_open: str | None  # tag that starts a call inside free text; None: the call is the whole message
    call_close: str | None  # tag that ends a call (None when call_open is None)
    call_separator: str | None  # between parallel calls; None: at most one call per message
    # auto mode: free text that reaches this must go on as a call (a prefix of call_open;
    # None: call_open itself)
    call_trigger: str | None
    arguments_keys: tuple[str, ...]  # JSON keys that hold the arguments object, preferred first
    call_suffix: str  # forced text after the arguments object

    def call_prefix(self, name: str) -> str: ...
    def render_tools_prompt(self, tools: list[ToolSpec]) -> str: ...
    def to_template_messages(self, messages: list[dict], tools: list[ToolSpec]) -> list[dict]: ...
    def render_call(self, name: str, arguments: dict) -> str: ...
    def render_call_json(self, name: str, arguments_json: str) -> str: ...


@dataclass(slots=True, frozen=True)
class JsonCallFormat:
    """Shared implementation: a call is `{"name":"<name>","<args key>":{...}}`, optionally wrapped
    in tags. Subclasses set the class constants and write the tools prompt and tool results."""

    name: str = ""
    call_open: str | None = None
    call_close: str | None = None
    call_separator: str | None = None
    call_trigger: str | None = None
    arguments_keys: tuple[str, ...] = ("arguments",)

    @property
    def call_suffix(self) -> str:
        return "}" + (f"\n{self.call_close}" if self.call_close else "")

    def call_prefix(self, name: str) -> str:
        head = f"{self.call_open}\n" if self.call_open else ""
        return f'{head}{{"name":{compact_json(name)},"{self.arguments_keys[0]}":'

    def render_call(self, name: str, arguments: dict) -> str:
        """Exactly the text the grammar forces for this call."""
        if not isinstance(arguments, dict):
            raise ValueError(f"{name}: arguments must be a dict, got {type(arguments).__name__}")
        return self.call_prefix(name) + compact_json(arguments) + self.call_suffix

    def render_call_json(self, name: str, arguments_json: str) -> str:
        """Render a call from its arguments JSON string verbatim (the string the model emitted,
        as a client echoes it back), so re-rendered history matches the original tokens."""
        try:
            parsed = json.loads(arguments_json) if arguments_json.strip() else {}
        except json.JSONDecodeError as exc:
            raise ValueError(f"{name}: arguments is not valid JSON ({exc.msg}): {arguments_json!r}") from None
        if not isinstance(parsed, dict):
            raise ValueError(f"{name}: arguments must be a JSON object, got {arguments_json!r}")
        body = arguments_json.strip() or "{}"
        return self.call_prefix(name) + body + self.call_suffix

    def render_tools_prompt(self, tools: list[ToolSpec]) -> str:
        raise NotImplementedError

    def tool_result_message(self, content: str, name: str | None) -> dict:
        raise NotImplementedError

    def to_template_messages(self, messages: list[dict], tools: list[ToolSpec]) -> list[dict]:
        """OpenAI chat messages -> plain {"role", "content"} messages; see module docstring."""
        out: list[dict] = []
        call_names: dict[str, str] = {}
        for i, message in enumerate(messages):
            if not isinstance(message, dict) or "role" not in message:
                raise ValueError(f"messages[{i}]: expected an object with a 'role'")
            role = message["role"]
            text = message_text(message.get("content"))
            if role in ("system", "developer"):
                out.append({"role": "system", "content": text})
            elif role == "user":
                out.append({"role": "user", "content": text})
            elif role == "assistant":
                calls = message.get("tool_calls") or []
                rendered = [self._render_openai_call(c, f"messages[{i}].tool_calls[{j}]", call_names) for j, c in enumerate(calls)]
                out.append({"role": "assistant", "content": self._join_assistant(text, rendered)})
            elif role == "tool":
                name = call_names.get(message.get("tool_call_id", ""), message.get("name"))
                result = self.tool_result_message(text, name)
                if out and self._merge_results(out[-1], result):
                    continue
                out.append(result)
            else:
                raise ValueError(f"messages[{i}].role: expected system, developer, user, assistant or tool, got {role!r}")
        if tools:
            block = self.render_tools_prompt(tools)
            if out and out[0]["role"] == "system" and out[0]["content"]:
                out[0] = {"role": "system", "content": out[0]["content"] + "\n\n" + block}
            elif out and out[0]["role"] == "system":
                out[0] = {"role": "system", "content": block}
            else:
                out.insert(0, {"role": "system", "content": block})
        return out

    def _render_openai_call(self, call: Any, path: str, call_names: dict[str, str]) -> str:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise ValueError(f"{path}: expected {{'type': 'function', 'function': {{'name', 'arguments'}}}}")
        arguments = function.get("arguments", "{}")
        if isinstance(call.get("id"), str):
            call_names[call["id"]] = function["name"]
        if isinstance(arguments, dict):
            return self.render_call(function["name"], arguments)
        if not isinstance(arguments, str):
            raise ValueError(f"{path}.function.arguments: expected a JSON string, got {type(arguments).__name__}")
        return self.render_call_json(function["name"], arguments)

    def _join_assistant(self, text: str, rendered_calls: list[str]) -> str:
        calls = (self.call_separator or "\n").join(rendered_calls)
        if not calls:
            return text
        return f"{text.rstrip()}\n{calls}" if text.strip() else calls

    def _merge_results(self, previous: dict, result: dict) -> bool:
        """Fold consecutive tool results into one message where the family does that."""
        return False
