"""The session's prompt step (server/render.py `render`) with the real SmolLM2 template: the
same ids whether tokenized on the loop or in a worker thread, a thread only for much new text
(a new system prompt with its tools), and the seconds of that thread's hop counted apart."""

from __future__ import annotations

import asyncio

from turnspec.engine.chat import ChatTemplate
from turnspec.server.render import INLINE_TOKENIZE_CHARS, render
from turnspec.tools_grammar.schema import parse_tools
from turnspec.workloads import generate_conversations, turns_for_prompting


def test_render_tokenizes_new_text_in_a_thread_and_seen_text_on_the_loop(smollm2_dir):
    chat = ChatTemplate.from_model_dir(smollm2_dir)
    turn = next(t for t in turns_for_prompting(generate_conversations(2, seed=3))
                if len(t.messages) >= 3)
    tools = parse_tools(turn.tools)
    want = chat.tokenizer.encode(chat.render_text(turn.messages, tools), add_special_tokens=False)
    assert chat.encode_mostly_seen(chat.render_text(turn.messages, tools),
                                   INLINE_TOKENIZE_CHARS) is None  # nothing tokenized by it

    ids, waited = asyncio.run(render(chat, None, turn.messages, tools))  # cold: a thread
    assert ids == list(want) and waited > 0.0
    ids, waited = asyncio.run(render(chat, None, turn.messages, tools))  # seen: the loop
    assert ids == list(want) and waited == 0.0

    # the next turn adds a short user message: its few new characters tokenize on the loop
    more = [*turn.messages, {"role": "assistant", "content": "Sure."},
            {"role": "user", "content": "And tomorrow?"}]
    ids, waited = asyncio.run(render(chat, None, more, tools))
    assert waited == 0.0
    assert ids == list(chat.tokenizer.encode(chat.render_text(more, tools),
                                             add_special_tokens=False))
    # continued from the stored turn's ids: those ids kept as they are, the rest appended
    ids, waited = asyncio.run(render(chat, want, more, tools))
    assert ids[: len(want)] == list(want) and waited == 0.0
