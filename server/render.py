"""A turn's prompt ids off the event loop's critical path: the chat template renders on the loop,
the new text tokenizes there when short, in a worker thread when long."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from turnspec.server.conversation import Message
from turnspec.tools_grammar.schema import ToolSpec

# the most new text a turn tokenizes on the loop (~0.4-1.6 us a character on the dev CPU: a
# voice turn's new messages); a new system prompt with its tools goes to a thread
INLINE_TOKENIZE_CHARS = 512


async def render(chat: Any, history_ids: list[int] | None, messages: list[Message],
                 tools: list[ToolSpec]) -> tuple[list[int], float]:
    """Prompt ids, and the seconds the loop waited on a worker thread beside the work (0 when
    none was used). With `history_ids` (same instructions as the stored turn) the ids continue
    them, so the prefix cache matches the previous turn exactly. The template renders on the
    loop (~0.1-0.4 ms for a voice turn's ~1,000 tokens on the dev CPU), and so does the
    tokenizing of text it has mostly seen (ChatTemplate.encode_mostly_seen: the system prompt
    and tools, the earlier turns are cached); more new text than INLINE_TOKENIZE_CHARS goes to a
    thread. A new ~1,000-token system prompt takes ~1.4 ms to tokenize, and every request
    arriving meanwhile would wait unread (the E2E residual of
    docs/history/loadtest-validation-2026-12.md); the thread's hop costs ~0.3 ms."""
    head, rest = chat.prompt_parts(history_ids, messages, tools)
    ids = chat.encode_mostly_seen(rest, INLINE_TOKENIZE_CHARS)  # one split of the text
    if ids is not None:
        return head + ids, 0.0
    marks: list[float] = []

    def encode(text: str) -> list[int]:
        marks.append(time.perf_counter())
        ids = chat.encode(text)
        marks.append(time.perf_counter())
        return ids

    t0 = time.perf_counter()
    ids = await asyncio.to_thread(encode, rest)
    return head + ids, (time.perf_counter() - t0) - (marks[1] - marks[0])
