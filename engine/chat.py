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

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from turnspec.tools_grammar.formats import ToolCallFormat, format_for_model, get_format
from turnspec.tools_grammar.schema import ToolSpec


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
            from turnspec.tools_grammar.grammar import GrammarCompiler

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
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def render(self, messages: list[dict], tools: list[ToolSpec] | None = None,
               add_generation_prompt: bool = True) -> list[int]:
        """Prompt token ids for a conversation (the template adds any BOS itself)."""
        return self.encode(self.render_text(messages, tools, add_generation_prompt))

    def render_many(self, convs: Sequence[tuple[list[dict], list[ToolSpec] | None]]) -> list[list[int]]:
        """`render` of many (messages, tools) at once: the same ids, tokenized in one batch call
        (the Rust tokenizer spreads a batch over threads; datagen renders ~28k prompts a shard)."""
        if not convs:
            return []
        texts = [self.render_text(messages, tools) for messages, tools in convs]
        return self.tokenizer(texts, add_special_tokens=False)["input_ids"]

    def render_continuation(self, history_ids: list[int], messages: list[dict],
                            tools: list[ToolSpec] | None = None) -> list[int]:
        """Token ids for `messages` that start with `history_ids` whenever the rendered
        conversation extends the decoded history; otherwise a fresh render (the prefix cache
        then still reuses whatever full blocks match, e.g. the system prompt and tools)."""
        text = self.render_text(messages, tools, add_generation_prompt=True)
        history = self.tokenizer.decode(history_ids, skip_special_tokens=False)
        if history and text.startswith(history):
            return list(history_ids) + self.encode(text[len(history):])
        return self.encode(text)
