"""Hermes / Qwen style: calls inside free text as `<tool_call>\n{json}\n</tool_call>`.

The default for SmolLM2 (ChatML template without tool support) and for Qwen models. Tool
results go back as a user turn wrapped in `<tool_response>` tags, consecutive results folded
into one turn, as Qwen's own template does.
"""

from __future__ import annotations

from dataclasses import dataclass

from turnspec.tools_grammar.formats.base import JsonCallFormat, compact_json
from turnspec.tools_grammar.schema import ToolSpec

_RESPONSE_OPEN, _RESPONSE_CLOSE = "<tool_response>", "</tool_response>"


@dataclass(slots=True, frozen=True)
class HermesFormat(JsonCallFormat):
    name: str = "hermes"
    call_open: str | None = "<tool_call>"
    call_close: str | None = "</tool_call>"
    call_separator: str | None = "\n"
    # `<tool_`, the prefix its call and result tags share: a small model that starts to write
    # a tool result in its own turn (SmolLM2 did on half the hand-written voice turns, with
    # made-up values a voice pipeline would speak) is steered into the call instead.
    call_trigger: str | None = "<tool_"
    arguments_keys: tuple[str, ...] = ("arguments", "parameters")

    def render_tools_prompt(self, tools: list[ToolSpec]) -> str:
        listing = "\n".join(compact_json(t.to_openai()) for t in tools)
        return (
            "# Tools\n\n"
            "You can call functions to help the user. The functions you can call are listed "
            "inside <tools></tools>, one JSON object per line:\n"
            f"<tools>\n{listing}\n</tools>\n\n"
            "To call a function, reply with a JSON object holding its name and arguments "
            "inside <tool_call></tool_call> tags:\n"
            '<tool_call>\n{"name":<function-name>,"arguments":<arguments-object>}\n</tool_call>\n'
            "If no function is needed, answer the user directly."
        )

    def tool_result_message(self, content: str, name: str | None) -> dict:
        return {"role": "user", "content": f"{_RESPONSE_OPEN}\n{content}\n{_RESPONSE_CLOSE}"}

    def _merge_results(self, previous: dict, result: dict) -> bool:
        text = previous["content"]
        if previous["role"] != "user" or not (text.startswith(_RESPONSE_OPEN) and text.endswith(_RESPONSE_CLOSE)):
            return False
        previous["content"] = f"{text}\n{result['content']}"
        return True
