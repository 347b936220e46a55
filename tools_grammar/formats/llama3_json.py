"""Llama 3.x JSON tool calling: the whole assistant message is `{"name":..,"parameters":{..}}`.

Meta's templates may put `<|python_tag|>` before the JSON; the parser accepts it, the grammar
never forces it (it is a special token, and plain JSON is the documented form for custom
tools). One call per message. Tool results go back with role "ipython", which every Llama 3
template renders as its own header.
"""

from __future__ import annotations

from dataclasses import dataclass

from turnspec.tools_grammar.formats.base import JsonCallFormat, compact_json
from turnspec.tools_grammar.schema import ToolSpec

PYTHON_TAG = "<|python_tag|>"


@dataclass(slots=True, frozen=True)
class Llama3JsonFormat(JsonCallFormat):
    name: str = "llama3_json"
    call_open: str | None = None
    call_close: str | None = None
    call_separator: str | None = None
    arguments_keys: tuple[str, ...] = ("parameters", "arguments")

    def render_tools_prompt(self, tools: list[ToolSpec]) -> str:
        listing = "\n\n".join(compact_json(t.to_openai()) for t in tools)
        return (
            "You have access to the functions below. To call one, reply with only a JSON object "
            'of the form {"name":<function-name>,"parameters":<arguments-object>} and nothing '
            "else. Do not use variables. If no function is needed, answer the user directly.\n\n"
            f"{listing}"
        )

    def tool_result_message(self, content: str, name: str | None) -> dict:
        return {"role": "ipython", "content": content}
