"""Tool-call formats, one file per model family, and the registry that picks one per model."""

from __future__ import annotations

from turnspec.tools_grammar.formats.base import ToolCallFormat, compact_json, message_text
from turnspec.tools_grammar.formats.hermes import HermesFormat
from turnspec.tools_grammar.formats.llama3_json import PYTHON_TAG, Llama3JsonFormat

_FORMATS: dict[str, ToolCallFormat] = {f.name: f for f in (HermesFormat(), Llama3JsonFormat())}
_LLAMA3_MARKERS = ("<|python_tag|>", "<|eot_id|>", "<|start_header_id|>")


def get_format(name: str) -> ToolCallFormat:
    """The format registered under `name` ("hermes", "llama3_json")."""
    try:
        return _FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown tool-call format {name!r} (known: {', '.join(sorted(_FORMATS))})") from None


def format_for_model(model_type: str, chat_template: str | None) -> str:
    """Pick the format name for a model: Llama-3 chat templates -> "llama3_json"; everything
    else (SmolLM2's ChatML, Qwen2/Qwen3) -> "hermes", which needs no template support."""
    if chat_template and any(marker in chat_template for marker in _LLAMA3_MARKERS):
        return "llama3_json"
    return "hermes"


__all__ = [
    "PYTHON_TAG", "HermesFormat", "Llama3JsonFormat", "ToolCallFormat", "compact_json",
    "format_for_model", "get_format", "message_text",
]
