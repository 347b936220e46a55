"""The prompt token ids of a workload file's turns, for a target that takes token ids
(SGLang's native `POST /generate`), read from the same file the load test plays.

`turnspec workload render` writes a workload JSONL file whose lines carry, beside the
conversation (`id`, `tools`, `messages`, `max_tokens`: any target can play it), a
`turnspec_tokens` object: what turnspec's server renders for each turn, so a native-endpoint
peer prefills exactly the tokens turnspec's engine gets:

    {"model": NAME, "tools_in_prompt": bool, "tool_format": "hermes",
     "structural_tags": {"auto": JSON, "required": JSON},   # {} without tools in the prompt
     "turns": {turn_key(tools, history): [token ids], ...}}

A turn is found by what it sends (`turn_key`: its tools and scripted history), so cycled
conversations and any file order find theirs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def turn_key(tools: Sequence[dict[str, Any]], history: Sequence[dict[str, Any]]) -> str:
    """What identifies one turn's prompt: the conversation's tools and the messages before it."""
    text = json.dumps([list(tools), list(history)], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def tools_key(tools: Sequence[dict[str, Any]]) -> str:
    return turn_key(tools, ())


@dataclass(slots=True, frozen=True)
class TokenTable:
    """Every line's `turnspec_tokens`, merged: prompt ids by turn, structural tags by tools."""

    path: str
    tools_in_prompt: bool
    tool_format: str
    turns: dict[str, list[int]]
    tags: dict[str, dict[str, str]]  # tools_key -> {tool_choice mode: structural-tag JSON}

    @classmethod
    def load(cls, path: str | Path) -> TokenTable:
        """Raises ValueError naming the line when one carries no usable `turnspec_tokens`, or
        when lines disagree on whether the tools are in the prompt."""
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as e:
            raise ValueError(f"{path}: cannot read the token file: {e}") from None
        turns: dict[str, list[int]] = {}
        tags: dict[str, dict[str, str]] = {}
        modes: set[tuple[bool, str]] = set()
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                raw = record["turnspec_tokens"]
                modes.add((bool(raw["tools_in_prompt"]), str(raw.get("tool_format", ""))))
                turns.update(_turns(raw["turns"]))
                if raw.get("structural_tags"):
                    tags[tools_key(record.get("tools") or [])] = _tags(raw["structural_tags"])
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                raise ValueError(f"{path}:{n}: no usable turnspec_tokens ({type(e).__name__}: "
                                 f"{e}); write the file with `turnspec workload render`"
                                 ) from None
        if not turns:
            raise ValueError(f"{path}: no conversations with token ids")
        if len(modes) > 1:
            raise ValueError(f"{path}: lines rendered differently ({sorted(modes)}); render the "
                             "whole file in one `turnspec workload render`")
        (in_prompt, fmt), = modes
        return cls(str(path), in_prompt, fmt, turns, tags)

    def prompt(self, tools: Sequence[dict[str, Any]], history: Sequence[dict[str, Any]]
               ) -> list[int]:
        ids = self.turns.get(turn_key(tools, history))
        if ids is None:
            raise KeyError(f"{self.path}: no token ids for this turn; the load test must play "
                           "the file the ids were rendered into, unchanged")
        return ids

    def tag(self, tools: Sequence[dict[str, Any]], mode: str) -> str:
        tag = self.tags.get(tools_key(tools), {}).get(mode)
        if tag is None:
            raise KeyError(f"{self.path}: no {mode!r} structural tag for these tools (rendered "
                           "without tools in the prompt?)")
        return tag


def _turns(raw: dict[str, Any]) -> dict[str, list[int]]:
    turns = {str(k): [int(t) for t in v] for k, v in raw.items()}
    if not turns or any(not ids for ids in turns.values()):
        raise ValueError("turns: expected non-empty token id lists")
    return turns


def _tags(raw: dict[str, Any]) -> dict[str, str]:
    if not all(isinstance(t, str) and t.startswith("{") for t in raw.values()):
        raise ValueError("structural_tags: expected structural-tag JSON strings")
    return dict(raw)
