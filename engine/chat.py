"""ChatTemplate: OpenAI-style messages + tools -> prompt token ids, through the HF tokenizer's
own chat template.

Templates that render tools natively (Qwen2/Qwen3) get `tools=` passed through. Templates
without tool support (SmolLM2's ChatML) get the model's tool-call format from tools_grammar:
tools rendered into the system prompt Hermes-style (`<tools>[...]</tools>`, calls as
`<tool_call>{json}</tool_call>`, results as `<tool_response>` user turns).

`render_continuation` keeps KV reuse exact across turns: when the new conversation's text
extends the decoded history (turn N-1's prompt + generated reply), only the new suffix is
tokenized and appended to the history ids, so the prefix cache matches every full block of
turn N-1 even where re-tokenizing the reply would have split tokens differently.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from turnspec.tools_grammar.formats import ToolCallFormat, format_for_model, get_format
from turnspec.tools_grammar.lru import LRU
from turnspec.tools_grammar.schema import ToolSpec

# stretches of text between added tokens whose ids `encode` keeps (a system prompt with its
# tools, each earlier message of the conversations in flight); each entry a few KB at most
STRETCHES = 4096


class ChatTemplate:
    def __init__(self, tokenizer: Any, model_type: str, vocab_size: int,
                 stop_token_ids: list[int]) -> None:
        template = tokenizer.chat_template
        if not template:
            raise ValueError("tokenizer has no chat_template; expected an instruct model folder "
                             "(chat_template.jinja or tokenizer_config.json)")
        self.tokenizer = tokenizer
        self.template_text = template if isinstance(template, str) else str(template)
        self.native_tools = "tools" in self.template_text
        self.tool_format: ToolCallFormat = get_format(format_for_model(model_type, self.template_text))
        self.vocab_size = vocab_size
        self.stop_token_ids = stop_token_ids
        self._grammar_compiler = None
        # stretch of text -> its token ids (shared by the loop and worker threads)
        self.stretches: LRU[str, tuple[int, ...]] = LRU(STRETCHES)

    @classmethod
    def from_model_dir(cls, model_dir: str | Path, tokenizer: Any | None = None,
                       vocab_size: int | None = None) -> ChatTemplate:
        from turnspec.engine.model.config import ModelConfig

        cfg = ModelConfig.from_model_dir(model_dir)
        if tokenizer is None:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(Path(model_dir))
        stops = list(cfg.eos_token_ids)
        if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in stops:
            stops.append(tokenizer.eos_token_id)
        return cls(tokenizer, cfg.model_type, vocab_size or cfg.vocab_size, stops)

    @property
    def grammar_compiler(self):
        """tools_grammar GrammarCompiler for this tokenizer (built on first use, ~0.3 s)."""
        if self._grammar_compiler is None:
            from turnspec.tools_grammar.compiler import GrammarCompiler

            self._grammar_compiler = GrammarCompiler(self.tokenizer, self.vocab_size, self.stop_token_ids)
        return self._grammar_compiler

    def render_text(self, messages: list[dict], tools: list[ToolSpec] | None = None,
                    add_generation_prompt: bool = True) -> str:
        if not messages:
            raise ValueError("messages: expected at least one message")
        tools = tools or []
        if self.native_tools:
            hf_tools = [{"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.parameters}} for t in tools]
            return self.tokenizer.apply_chat_template(
                messages, tools=hf_tools or None, add_generation_prompt=add_generation_prompt,
                tokenize=False)
        plain = self.tool_format.to_template_messages(messages, tools)
        return self.tokenizer.apply_chat_template(
            plain, add_generation_prompt=add_generation_prompt, tokenize=False)

    def encode(self, text: str) -> list[int]:
        """Token ids of `text` (no special tokens added). Where each stretch between added
        tokens tokenizes alone as inside the whole text (`_pieces`), a stretch's ids come from
        a cache: a conversation resent whole every turn (HTTP clients, a stateless client over
        WS) tokenizes only its new messages, not again its system prompt, tools and earlier
        turns (an 870-token voice prompt: 1.4 ms whole on the dev CPU)."""
        if self._pieces is None:
            return list(self.tokenizer.encode(text, add_special_tokens=False))
        return self._encode_parts(self._pieces[0].split(text))

    def encode_mostly_seen(self, text: str, most_new: int) -> list[int] | None:
        """`encode(text)` when at most `most_new` of its characters lie in stretches not cached
        (all of them where stretches are not cached, `_pieces` None), else None and nothing
        tokenized. New text costs ~0.4 us a character on the dev CPU; a warm prompt ~0.1 ms
        however long."""
        if self._pieces is None:
            return self.encode(text) if len(text) <= most_new else None
        parts = self._pieces[0].split(text)
        new = sum(len(p) for p in parts[::2] if p and p not in self.stretches)
        return self._encode_parts(parts) if new <= most_new else None

    def _encode_parts(self, parts: list[str]) -> list[int]:
        """Ids of a text split around its added tokens: text, token, text, token, ..., text."""
        added = self._pieces[1]
        ids: list[int] = []
        for i, part in enumerate(parts):
            if i % 2:
                ids.append(added[part])
            elif part:
                ids.extend(self._stretch(part))
        return ids

    def _stretch(self, part: str) -> tuple[int, ...]:
        ids = self.stretches.get(part)
        if ids is None:
            ids = tuple(self.tokenizer.backend_tokenizer.encode(part, add_special_tokens=False).ids)
            self.stretches.put(part, ids)
        return ids

    def render(self, messages: list[dict], tools: list[ToolSpec] | None = None,
               add_generation_prompt: bool = True) -> list[int]:
        """Prompt token ids for a conversation (the template adds any BOS itself)."""
        return self.encode(self.render_text(messages, tools, add_generation_prompt))

    def render_many(self, convs: Sequence[tuple[list[dict], list[ToolSpec] | None]]) -> list[list[int]]:
        """`render` of many (messages, tools) at once: the same ids, tokenized in one batch call
        (the Rust tokenizer spreads a batch over threads; datagen renders ~28k prompts a shard,
        a rebuild of carried completions ~100k)."""
        if not convs:
            return []
        texts = [self.render_text(messages, tools) for messages, tools in convs]
        if self._pieces is None:
            return self.tokenizer(texts, add_special_tokens=False)["input_ids"]
        return self._encode_by_piece(texts)

    @cached_property
    def _pieces(self) -> tuple[re.Pattern, dict[str, int]] | None:
        """(added-token splitter, their ids) when every stretch of text between added tokens
        tokenizes alone exactly as inside the whole text: the tokenizer splits added tokens out
        first, and with no normalizer (`normalizes_nothing`) and no lstrip/rstrip/single-word
        token, nothing crosses a split (SmolLM2; Qwen2 has an NFC normalizer). None: tokenize
        whole texts."""
        backend = getattr(self.tokenizer, "backend_tokenizer", None)
        if backend is None or not normalizes_nothing(backend.normalizer):
            return None
        added = backend.get_added_tokens_decoder()
        if not added or any(t.lstrip or t.rstrip or t.single_word or t.normalized
                            for t in added.values()):
            return None
        ids = {t.content: i for i, t in added.items()}
        # longest first: at each position the alternation takes the longest token, as the
        # tokenizer's leftmost-longest match does
        split = re.compile("(" + "|".join(re.escape(c) for c in sorted(ids, key=len, reverse=True)) + ")")
        return split, ids

    def _encode_by_piece(self, texts: list[str]) -> list[list[int]]:
        """Tokenize each distinct stretch once: a call's ~1,000-token system prompt with its tools
        opens every turn's prompt, and each turn repeats the turns before it."""
        split, added = self._pieces
        parts = [split.split(text) for text in texts]   # text, token, text, token, ..., text
        new = list({p for ps in parts for p in ps[::2] if p})
        encoded = self.tokenizer.backend_tokenizer.encode_batch(new, add_special_tokens=False)
        ids_of = {p: e.ids for p, e in zip(new, encoded, strict=True)}
        out = []
        for ps in parts:
            ids: list[int] = []
            for i, p in enumerate(ps):
                if i % 2:
                    ids.append(added[p])
                elif p:
                    ids.extend(ids_of[p])
            out.append(ids)
        return out

    def render_continuation(self, history_ids: list[int], messages: list[dict],
                            tools: list[ToolSpec] | None = None) -> list[int]:
        """Token ids for `messages` that start with `history_ids` whenever the rendered
        conversation extends the decoded history; otherwise a fresh render (the prefix cache
        then still reuses whatever full blocks match, e.g. the system prompt and tools)."""
        head, rest = self.prompt_parts(history_ids, messages, tools)
        return head + self.encode(rest)

    def prompt_parts(self, history_ids: list[int] | None, messages: list[dict],
                     tools: list[ToolSpec] | None = None) -> tuple[list[int], str]:
        """A prompt as (ids known, text still to tokenize): `history_ids` and the rendered
        text past them where it extends their decoded text, else no ids and all the text.
        `render_continuation` is head + encode(rest); a server tokenizes `rest` where it
        costs least (server/session.py)."""
        text = self.render_text(messages, tools, add_generation_prompt=True)
        if history_ids:
            history = self.tokenizer.decode(history_ids, skip_special_tokens=False)
            if text.startswith(history):
                return list(history_ids), text[len(history):]
        return [], text


def normalizes_nothing(normalizer: Any) -> bool:
    """No normalizer, or a Sequence of none (nested): what SmolLM2's tokenizer carries when
    transformers 5.12 (SGLang's pin) converts it from the GGUF, where 5.25 writes none. Any
    other normalizer may change text across an added token's edge."""
    if normalizer is None:
        return True
    return _empty_sequence(json.loads(normalizer.__getstate__()))


def _empty_sequence(state: dict) -> bool:
    return state.get("type") == "Sequence" and all(
        _empty_sequence(s) for s in state.get("normalizers") or [])
