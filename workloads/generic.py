"""Generic chat prompts (no tools): small talk and quick questions a voice assistant gets.
They measure plain-text speed and keep a speculator from over-fitting to tool calls.

The prompts are in data/generic_prompts.json, one `{"kind", "text"}` object per prompt. The
file is append only: a prompt's id is its position, and the train / held-out split of a prompt
is a hash of its id, so inserting or reordering would move held-out prompts into train.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from turnspec.workloads.conversation import Conversation

PROMPTS_FILE = Path(__file__).parent / "data" / "generic_prompts.json"
SYSTEM = ("You are a friendly voice assistant. Your replies are spoken aloud: answer in one to three "
          "short sentences, with no lists or formatting.")


@cache
def user_turns() -> tuple[tuple[str, str], ...]:
    """(kind, text) of every generic prompt, in file order (read once)."""
    records = json.loads(PROMPTS_FILE.read_text(encoding="utf-8"))
    if not isinstance(records, list) or not all(
            isinstance(r, dict) and isinstance(r.get("kind"), str) and isinstance(r.get("text"), str)
            for r in records):
        raise ValueError(f"{PROMPTS_FILE}: expected a JSON list of {{\"kind\": str, \"text\": str}} objects")
    return tuple((r["kind"], r["text"]) for r in records)


def generic_prompts(n: int | None = None) -> list[Conversation]:
    """The generic prompts (392) as one-user-turn conversations without tools, in a fixed
    order; n keeps the first n."""
    turns = user_turns()
    chosen = turns if n is None else turns[:n]
    return [
        Conversation(f"generic-{i:04d}", "generic", "generic", f"generic.{key}", [],
                     [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}])
        for i, (key, text) in enumerate(chosen)
    ]
