"""Compiling tool-call grammars, once per tool set and request shape, and caching them.

    compiler = GrammarCompiler(tokenizer, vocab_size=config.vocab_size, stop_token_ids=[eos])
    prepared = compiler.prepare(tools, choice, fmt)   # compile or cache hit (ms on a miss)
    matcher = prepared.matcher()                      # per request, tens of microseconds
    tag = compiler.structural_tag(tools, choice, fmt) # the structural tag alone, not compiled

Compiled grammars are cached by (tool-set hash, mode, function name, format, parallel); a cold
compile for SmolLM2's 49k vocabulary costs milliseconds (benchmarks/mask.py), so the server
compiles on a background thread as soon as a session declares its tools (server/grammars.py).
A backend that compiles the grammar itself (SGLang) takes only the structural tag, which is
built without compiling.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import xgrammar as xgr

from turnspec.tools_grammar.closing import Closer, CloseVocab
from turnspec.tools_grammar.formats.base import ToolCallFormat
from turnspec.tools_grammar.grammar import ToolGrammarMatcher
from turnspec.tools_grammar.grammar_spec import (
    OutputBounds,
    build_structural_tag,
    clear_schema_cache,
)
from turnspec.tools_grammar.lru import LRU
from turnspec.tools_grammar.schema import ToolChoice, ToolSpec, tools_hash


@dataclass(slots=True, frozen=True)
class CompiledToolGrammar:
    """A tool set's compiled grammar for one request shape; `matcher()` is a fresh
    per-request matcher over it (no compile: tens of microseconds)."""

    compiled: xgr.CompiledGrammar
    structural_tag: str  # the xgrammar structural-tag JSON it was compiled from
    vocab_size: int
    stop_token_ids: tuple[int, ...]
    closer: Closer | None  # budget steering (required / named calls)

    def matcher(self) -> ToolGrammarMatcher:
        return ToolGrammarMatcher(self.compiled, self.vocab_size, list(self.stop_token_ids),
                                  self.structural_tag, self.closer)


@dataclass(slots=True, frozen=True)
class StructuralTagGrammar:
    """The tool grammar as its xgrammar structural tag alone, for a backend that compiles it
    itself (SGLang's `structural_tag` sampling parameter): nothing is compiled here, and one
    instance serves every request (it holds no per-request state)."""

    structural_tag: str

    def __post_init__(self) -> None:
        if not isinstance(self.structural_tag, str) or not self.structural_tag.startswith("{"):
            raise ValueError("structural_tag: expected the structural tag's JSON text")


class GrammarCompiler:
    """Compiles tool-call grammars for one tokenizer and caches them (LRU, thread-safe)."""

    def __init__(
        self,
        tokenizer: Any,
        vocab_size: int,
        stop_token_ids: list[int],
        *,
        cache_size: int = 256,
        max_threads: int | None = None,
        bounds: OutputBounds | None = None,
    ) -> None:
        if not stop_token_ids:
            raise ValueError("stop_token_ids: need at least one stop token (e.g. the EOS id)")
        if vocab_size < len(tokenizer):
            raise ValueError(f"vocab_size={vocab_size} is smaller than the tokenizer's {len(tokenizer)} tokens")
        self.vocab_size = vocab_size
        self.stop_token_ids = [int(t) for t in stop_token_ids]
        self.bounds = bounds or OutputBounds()
        self._info = xgr.TokenizerInfo.from_huggingface(
            tokenizer, vocab_size=vocab_size, stop_token_ids=self.stop_token_ids
        )
        threads = max_threads or min(8, os.cpu_count() or 1)
        # Our own LRU (keyed by a short hash) replaces xgrammar's unbounded string-keyed cache.
        self._compiler = xgr.GrammarCompiler(self._info, max_threads=threads, cache_enabled=False)
        # key -> (compiled grammar, the structural-tag JSON it was compiled from)
        self._cache: LRU[tuple, tuple[xgr.CompiledGrammar, str]] = LRU(cache_size)
        self._tags: LRU[tuple, str] = LRU(cache_size)  # key -> structural-tag JSON
        self._lock = threading.Lock()
        self._closer: Closer | None = None  # budget steering's policy, built on first use
        self._encode = lambda text: tokenizer.encode(text, add_special_tokens=False)
        self.misses = 0
        self.last_compile_s = 0.0

    @property
    def hits(self) -> int:
        """Grammars served from the cache, compiled before."""
        return self._cache.hits

    def compile(
        self, tools: list[ToolSpec], choice: ToolChoice, fmt: ToolCallFormat, *, parallel_tool_calls: bool = False
    ) -> xgr.CompiledGrammar | None:
        """The compiled grammar for this request shape, from cache when possible; None when the
        output is unconstrained (no tools, or tool_choice none)."""
        entry = self._entry(tools, choice, fmt, parallel_tool_calls)
        return None if entry is None else entry[0]

    def _key(self, tools: list[ToolSpec], choice: ToolChoice, fmt: ToolCallFormat,
             parallel_tool_calls: bool) -> tuple | None:
        if choice.mode == "none" or not tools:
            return None
        return (tools_hash(tools), choice.mode, choice.name, fmt.name, parallel_tool_calls)

    def _entry(self, tools: list[ToolSpec], choice: ToolChoice, fmt: ToolCallFormat,
               parallel_tool_calls: bool) -> tuple[xgr.CompiledGrammar, str] | None:
        key = self._key(tools, choice, fmt, parallel_tool_calls)
        if key is None:
            return None
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        spec = self._tag(key, tools, choice, fmt, parallel_tool_calls)
        start = time.perf_counter()
        compiled = self._compiler.compile_structural_tag(spec)
        elapsed = time.perf_counter() - start
        with self._lock:
            self.misses += 1
            self.last_compile_s = elapsed
        self._cache.put(key, (compiled, spec))
        return compiled, spec

    def _tag(self, key: tuple, tools: list[ToolSpec], choice: ToolChoice, fmt: ToolCallFormat,
             parallel_tool_calls: bool) -> str:
        tag = self._tags.get(key)
        if tag is not None:
            return tag
        tag = json.dumps(build_structural_tag(tools, choice, fmt,
                                              parallel_tool_calls=parallel_tool_calls,
                                              bounds=self.bounds))
        self._tags.put(key, tag)
        return tag

    def structural_tag(self, tools: list[ToolSpec], choice: ToolChoice, fmt: ToolCallFormat, *,
                       parallel_tool_calls: bool = False) -> StructuralTagGrammar | None:
        """The grammar as its structural tag alone, built (cached) but not compiled: what a
        backend that compiles it itself needs (SGLang). None when the output is unconstrained."""
        key = self._key(tools, choice, fmt, parallel_tool_calls)
        if key is None:
            return None
        return StructuralTagGrammar(self._tag(key, tools, choice, fmt, parallel_tool_calls))

    def prepare(self, tools: list[ToolSpec], choice: ToolChoice, fmt: ToolCallFormat, *,
                parallel_tool_calls: bool = False) -> CompiledToolGrammar | None:
        """Compile (or take from the cache) the grammar of this request shape, with the budget
        steering its mode needs; `.matcher()` on the result is per request and cheap. None when
        the output is unconstrained. Milliseconds on a miss: call it off the event loop."""
        entry = self._entry(tools, choice, fmt, parallel_tool_calls)
        if entry is None:
            return None
        compiled, spec = entry
        closer = self.closer() if choice.mode in ("required", "function") else None
        return CompiledToolGrammar(compiled, spec, self.vocab_size, tuple(self.stop_token_ids),
                                   closer)

    def clear_cache(self) -> None:
        """Forget compiled grammars (and the per-schema EBNF memo), e.g. to time cold compiles."""
        self._cache.clear()
        self._tags.clear()
        clear_schema_cache()

    def matcher(
        self, tools: list[ToolSpec], choice: ToolChoice, fmt: ToolCallFormat, *, parallel_tool_calls: bool = False
    ) -> ToolGrammarMatcher | None:
        """A fresh per-request matcher; None when the output is unconstrained.

        parallel_tool_calls=False (the default) allows one call per turn: a small model under a
        grammar may otherwise chain calls until max_tokens cuts one in half."""
        prepared = self.prepare(tools, choice, fmt, parallel_tool_calls=parallel_tool_calls)
        return None if prepared is None else prepared.matcher()

    def closer(self) -> Closer:
        """The closing policy for budget-aware calls (its vocabulary tables built once)."""
        with self._lock:
            if self._closer is None:
                vocab = CloseVocab(list(self._info.decoded_vocab), self.vocab_size,
                                   self.stop_token_ids, self._encode)
                self._closer = Closer(vocab)
            return self._closer
