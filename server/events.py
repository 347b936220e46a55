"""Typed events a turn streams to its transport.

Text and tool-call events are tools_grammar's stream-parser events (`TextDelta`,
`ToolCallStarted`, `ToolCallArgumentsDelta`, `ToolCallDone`, `ToolCallInvalid`); a turn ends
with exactly one `TurnDone`. Transports only translate these to wire frames.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from turnspec.server.errors import ApiError

# Turn finish reasons on the wire (OpenAI's, plus "cancelled" for barge-in / client abort).
FINISH_STOP, FINISH_LENGTH, FINISH_TOOLS = "stop", "length", "tool_calls"
FINISH_CANCELLED, FINISH_ERROR = "cancelled", "error"


@dataclass(slots=True, frozen=True)
class CallRecord:
    """A finished tool call as the transports report it."""

    call_id: str
    name: str
    arguments_json: str


@dataclass(slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0


@dataclass(slots=True)
class TurnDone:
    """The last event of a turn: why it ended, what it produced, and the `turnspec` block."""

    finish_reason: str
    text: str
    tool_calls: list[CallRecord]
    usage: Usage
    turnspec: dict[str, Any] = field(default_factory=dict)
    error: ApiError | None = None
