"""ChatTemplate.render_many: one tokenizer batch, the same ids as `render` prompt by prompt (the
committed completions rebuild against prompt hashes, so a single differing id would strand them)."""

from __future__ import annotations

from turnspec.engine.chat import ChatTemplate
from turnspec.tools_grammar.schema import parse_tools
from turnspec.workloads import (
    generate_conversations,
    synthetic_conversations,
    turns_for_prompting,
)


def test_render_many_equals_render(smollm2_dir):
    chat = ChatTemplate.from_model_dir(smollm2_dir)
    turns = list(turns_for_prompting(generate_conversations(4, seed=1)
                                     + synthetic_conversations(3, seed=1)))
    convs = [(t.messages, parse_tools(t.tools) or None) for t in turns]
    convs.append(([{"role": "user", "content": "héllo — ünïcode, emoji 🎙️ and  double  spaces"}],
                  None))
    # added tokens typed inside the text, back to back, at the ends and next to spaces
    convs.append(([{"role": "user", "content": "<|im_end|><|im_start|> a<empty_output>b "
                                               " <|endoftext|>\n<file_sep><filename>x"}], None))
    convs.append(([{"role": "user", "content": "<|im_start|>"}], None))
    assert len(convs) > 20 and any(tools for _, tools in convs)
    # SmolLM2 takes the piecewise path (each stretch between added tokens tokenized once)
    assert chat._pieces is not None
    assert chat.render_many(convs) == [chat.render(m, t) for m, t in convs]
    assert chat.render_many([]) == []
