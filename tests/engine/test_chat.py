"""ChatTemplate's ids: `encode` (its stretches between added tokens cached) and `render_many`
(one tokenizer batch) give exactly the ids of the tokenizer on the whole text (the committed
completions rebuild against prompt hashes, and the prefix cache matches ids: a single differing
id would strand them)."""

from __future__ import annotations

from turnspec.engine.chat import ChatTemplate
from turnspec.tools_grammar.schema import parse_tools
from turnspec.workloads import (
    generate_conversations,
    synthetic_conversations,
    turns_for_prompting,
)


def _convs() -> list[tuple[list[dict], list | None]]:
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
    return convs


def test_render_many_equals_render(smollm2_dir):
    chat = ChatTemplate.from_model_dir(smollm2_dir)
    convs = _convs()
    # SmolLM2 takes the piecewise path (each stretch between added tokens tokenized once)
    assert chat._pieces is not None
    assert chat.render_many(convs) == [chat.render(m, t) for m, t in convs]
    assert chat.render_many([]) == []


def test_encode_is_the_whole_text_tokenization_cold_and_cached(smollm2_dir):
    chat = ChatTemplate.from_model_dir(smollm2_dir)
    texts = [chat.render_text(m, t) for m, t in _convs()]
    whole = [list(chat.tokenizer.encode(t, add_special_tokens=False)) for t in texts]
    assert [chat.encode(t) for t in texts] == whole          # cold: every stretch new
    assert chat.stretches.hits > 0                           # the shared system prompts
    assert [chat.encode(t) for t in texts] == whole          # warm: every stretch cached
    suffixes = [t[len(t) // 3 :] for t in texts]             # a continuation's new text
    assert [chat.encode(t) for t in suffixes] == [
        list(chat.tokenizer.encode(t, add_special_tokens=False)) for t in suffixes]


def test_an_empty_normalizer_sequence_keeps_the_piecewise_path(smollm2_dir):
    """transformers 5.12 (SGLang's pin) converts SmolLM2's GGUF tokenizer with an empty
    normalizer Sequence where 5.25 writes none: still no normalizing, so stretches stay cached
    and the ids stay the whole text's. A normalizer that does something turns the path off."""
    from tokenizers import normalizers

    from turnspec.engine.chat import normalizes_nothing

    chat = ChatTemplate.from_model_dir(smollm2_dir)
    chat.tokenizer.backend_tokenizer.normalizer = normalizers.Sequence(
        [normalizers.Sequence([])])
    assert chat._pieces is not None
    texts = [chat.render_text(m, t) for m, t in _convs()]
    assert [chat.encode(t) for t in texts] == [
        list(chat.tokenizer.encode(t, add_special_tokens=False)) for t in texts]
    assert normalizes_nothing(None)
    assert not normalizes_nothing(normalizers.NFC())
    assert not normalizes_nothing(normalizers.Sequence([normalizers.Sequence([]),
                                                        normalizers.Lowercase()]))
    nfc = ChatTemplate.from_model_dir(smollm2_dir)
    nfc.tokenizer.backend_tokenizer.normalizer = normalizers.Sequence([normalizers.NFC()])
    assert nfc._pieces is None
