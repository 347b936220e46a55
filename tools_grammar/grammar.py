"""Grammar-constrained tool calls: compile per tool set, match per request, mask logits.

    compiler = GrammarCompiler(tokenizer, vocab_size=config.vocab_size, stop_token_ids=[eos])
    matcher = compiler.matcher(tools, choice, fmt)          # None: unconstrained
    bitmask = matcher.new_bitmask(block)                    # [block, ceil(V/32)] int32, CPU
    valid = matcher.fill_block_masks(drafts, bitmask)       # row k = mask after drafts[:k]
    apply_bitmask(logits, bitmask)                          # logits [block, V] -> -inf where banned
    ... verify ...; matcher.accept_tokens(committed)        # advance over what was kept

Plain decoding is the block of one: `fill_mask(bitmask, 0)`, sample, `accept(token)`.
Required and named calls are budget-aware: given the tokens left (`remaining=`), the masks steer
the call to close within them (closing.py).
Compiled grammars are cached by (tool-set hash, mode, function name, format, parallel); a cold
compile for SmolLM2's 49k vocabulary costs milliseconds (benchmarks/mask.py), so the server should
compile before the request reaches the engine step loop.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import OrderedDict
from typing import Any

import numpy as np
import torch
import xgrammar as xgr

from turnspec.tools_grammar.closing import BudgetSteer, Closer, CloseVocab
from turnspec.tools_grammar.formats.base import ToolCallFormat
from turnspec.tools_grammar.grammar_spec import (
    OutputBounds,
    build_structural_tag,
    clear_schema_cache,
)
from turnspec.tools_grammar.schema import ToolChoice, ToolSpec, tools_hash


class ToolGrammarMatcher:
    """Per-request grammar state over token ids (wraps xgrammar.GrammarMatcher). Not thread-safe:
    one request is advanced by one thread (the engine step loop)."""

    __slots__ = ("_matcher", "vocab_size", "_stop_ids", "_chains", "structural_tag", "_steer",
                 "_history")

    def __init__(self, compiled: xgr.CompiledGrammar, vocab_size: int, stop_token_ids: list[int],
                 structural_tag: str | None = None, closer: Closer | None = None) -> None:
        self._matcher = xgr.GrammarMatcher(compiled)
        # Budget steering (required / named calls): masks given `remaining` keep the call
        # closable within it; it needs the tokens accepted so far.
        self._steer = BudgetSteer(closer) if closer is not None else None
        self._history: list[int] = []
        # The xgrammar structural-tag JSON this grammar was compiled from, for backends that
        # take the grammar as a request parameter instead of a matcher (SGLang).
        self.structural_tag = structural_tag
        self.vocab_size = vocab_size
        self._stop_ids = frozenset(stop_token_ids)
        self._chains: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def new_bitmask(self, rows: int) -> torch.Tensor:
        """A CPU bitmask with every token allowed (all bits set), int32 [rows, ceil(vocab_size / 32)]."""
        return xgr.allocate_token_bitmask(rows, self.vocab_size)

    def fill_mask(self, bitmask: torch.Tensor, row: int, remaining: int | None = None) -> bool:
        """bitmask[row] := the tokens allowed at the next position (state unchanged); with
        `remaining` (tokens left, this one included) a required/named call is steered to close
        within them. Returns False when every token is allowed (free text under tool_choice
        auto), so applying the row would change nothing."""
        if self._matcher.is_terminated():
            raise RuntimeError("grammar matcher already accepted a stop token; nothing follows it")
        need_apply = bool(self._matcher.fill_next_token_bitmask(bitmask, row))
        if self._steer is not None and remaining is not None:
            self._steer.narrow(self._matcher, bitmask[row].numpy(), remaining, self._history)
            return True
        return need_apply

    def accept(self, token_id: int) -> bool:
        """Advance over one token; False (state unchanged) if the grammar does not allow it."""
        ok = bool(self._matcher.accept_token(int(token_id)))
        if ok:
            self._history.append(int(token_id))
        return ok

    def accept_tokens(self, token_ids: list[int]) -> int:
        """Advance over tokens in order until one is refused; returns how many were accepted."""
        for i, token in enumerate(token_ids):
            if not self.accept(token):
                return i
        return len(token_ids)

    def rollback(self, n: int) -> None:
        """Undo the last n accepted tokens."""
        if n > 0:
            self._matcher.rollback(n)
            del self._history[-n:]

    def reset(self) -> None:
        self._matcher.reset()
        self._history.clear()

    def is_terminated(self) -> bool:
        """True once a stop token was accepted."""
        return bool(self._matcher.is_terminated())

    def is_completed(self) -> bool:
        """True when the output so far is a complete sentence of the grammar (a stop may follow)."""
        return bool(self._matcher.is_completed())

    def jump_forward_tokens(self) -> list[int]:
        """Tokens the grammar forces next (e.g. the rest of a tool name), for jump-forward decoding."""
        return list(self._matcher.find_jump_forward_tokens())

    def fill_block_masks(self, draft_tokens: list[int], bitmask: torch.Tensor, row_offset: int = 0,
                         remaining: int | None = None) -> int:
        """Masks for a speculative verify block: row k (k = 0..len(draft)) gets the mask after
        accepting draft_tokens[:k]. Stops at the first draft token the grammar refuses, or just
        after a stop token (nothing follows it); rows past that are filled all-allowed because
        verification never reads them. The matcher state is unchanged on return.
        With `remaining`, row k is steered as fill_mask would with remaining - k.
        Returns the number of valid rows (1 + number of draft tokens walked over)."""
        n = len(draft_tokens) + 1
        rows = bitmask[row_offset:row_offset + n]  # [n, W] int32, a view
        if rows.shape[0] != n:
            raise ValueError(f"bitmask has {bitmask.shape[0] - row_offset} rows from row {row_offset}, need {n}")
        if self._matcher.is_terminated():
            raise RuntimeError("grammar matcher already accepted a stop token; nothing follows it")
        next_token, next_sibling = self._chain(n)
        tokens = torch.tensor([0, *draft_tokens], dtype=torch.int64)  # node 0 = current state
        # One C++ walk over the chain (xgrammar treats it as a draft tree): it fills each row,
        # accepts that node's token, and rolls everything back before returning.
        self._matcher.traverse_draft_tree(next_token, next_sibling, tokens, rows)
        # Row k is valid while every draft before it was allowed and was not a stop token.
        # (A plain loop: ~3 µs for 15 drafts, 4x faster than numpy on arrays this small.)
        words = rows.numpy()  # [n, W] int32, shares memory with the bitmask
        steer = self._steer if remaining is not None else None
        valid, walked = n, 0
        for k in range(n):
            if steer is not None:  # the matcher stands at row k's state (walked == k)
                steer.narrow(self._matcher, words[k], remaining - k, self._history + draft_tokens[:k])
            if k == n - 1:
                break
            token = draft_tokens[k]
            if token in self._stop_ids or not 0 <= token < self.vocab_size or not (words.item(k, token >> 5) >> (token & 31)) & 1:
                valid = k + 1
                break
            if steer is not None:
                self._matcher.accept_token(int(token))
                walked += 1
        if walked:
            self._matcher.rollback(walked)
        if valid < n:
            rows[valid:] = -1
        return valid

    def _chain(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Child/sibling index tensors describing a straight chain of n nodes."""
        chain = self._chains.get(n)
        if chain is None:
            next_token = torch.arange(1, n + 1, dtype=torch.int64)
            next_token[-1] = -1
            chain = (next_token, torch.full((n,), -1, dtype=torch.int64))
            self._chains[n] = chain
        return chain


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
        self._cache: OrderedDict[tuple, tuple[xgr.CompiledGrammar, str]] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._closer: Closer | None = None  # budget steering's policy, built on first use
        self._encode = lambda text: tokenizer.encode(text, add_special_tokens=False)
        self.hits = 0
        self.misses = 0
        self.last_compile_s = 0.0

    def compile(
        self, tools: list[ToolSpec], choice: ToolChoice, fmt: ToolCallFormat, *, parallel_tool_calls: bool = False
    ) -> xgr.CompiledGrammar | None:
        """The compiled grammar for this request shape, from cache when possible; None when the
        output is unconstrained (no tools, or tool_choice none)."""
        entry = self._entry(tools, choice, fmt, parallel_tool_calls)
        return None if entry is None else entry[0]

    def _entry(self, tools: list[ToolSpec], choice: ToolChoice, fmt: ToolCallFormat,
               parallel_tool_calls: bool) -> tuple[xgr.CompiledGrammar, str] | None:
        if choice.mode == "none" or not tools:
            return None
        key = (tools_hash(tools), choice.mode, choice.name, fmt.name, parallel_tool_calls)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                self.hits += 1
                return cached
        spec = json.dumps(build_structural_tag(tools, choice, fmt, parallel_tool_calls=parallel_tool_calls,
                                               bounds=self.bounds))
        start = time.perf_counter()
        compiled = self._compiler.compile_structural_tag(spec)
        elapsed = time.perf_counter() - start
        with self._lock:
            self.misses += 1
            self.last_compile_s = elapsed
            self._cache[key] = (compiled, spec)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return compiled, spec

    def clear_cache(self) -> None:
        """Forget compiled grammars (and the per-schema EBNF memo), e.g. to time cold compiles."""
        with self._lock:
            self._cache.clear()
        clear_schema_cache()

    def matcher(
        self, tools: list[ToolSpec], choice: ToolChoice, fmt: ToolCallFormat, *, parallel_tool_calls: bool = False
    ) -> ToolGrammarMatcher | None:
        """A fresh per-request matcher; None when the output is unconstrained.

        parallel_tool_calls=False (the default) allows one call per turn: a small model under a
        grammar may otherwise chain calls until max_tokens cuts one in half."""
        entry = self._entry(tools, choice, fmt, parallel_tool_calls)
        if entry is None:
            return None
        compiled, spec = entry
        closer = self.closer() if choice.mode in ("required", "function") else None
        return ToolGrammarMatcher(compiled, self.vocab_size, self.stop_token_ids, spec, closer)

    def closer(self) -> Closer:
        """The closing policy for budget-aware calls (its vocabulary tables built once)."""
        with self._lock:
            if self._closer is None:
                vocab = CloseVocab(list(self._info.decoded_vocab), self.vocab_size,
                                   self.stop_token_ids, self._encode)
                self._closer = Closer(vocab)
            return self._closer


def apply_bitmask(logits: torch.Tensor, bitmask: torch.Tensor, rows: list[int] | None = None) -> None:
    """In place: logits [rows, V] float -> -inf where bitmask [rows, W] int32 has a 0 bit; with
    `rows`, only those rows (one kernel for all of them; the others are left as they are).
    Columns past W*32 (padded vocabularies) are not real tokens and are banned too."""
    if logits.dim() != 2 or bitmask.dim() != 2 or logits.shape[0] != bitmask.shape[0]:
        raise ValueError(
            f"apply_bitmask: expected logits [rows, V] and bitmask [rows, W], got {tuple(logits.shape)} and {tuple(bitmask.shape)}"
        )
    if bitmask.dtype != torch.int32:
        raise ValueError(f"apply_bitmask: bitmask must be int32, got {bitmask.dtype}")
    if rows is not None and rows and not (min(rows) >= 0 and max(rows) < logits.shape[0]):
        raise ValueError(f"apply_bitmask: rows must index the {logits.shape[0]} logits rows, got {rows}")
    if bitmask.device != logits.device:
        bitmask = bitmask.to(logits.device, non_blocking=True)
    covered = bitmask.shape[1] * 32
    width = logits.shape[1]
    xgr.apply_token_bitmask_inplace(logits, bitmask, vocab_size=min(width, covered), indices=rows)
    if width > covered:
        logits[slice(None) if rows is None else rows, covered:] = float("-inf")


def unpack_bitmask(bitmask: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """bitmask [rows, W] int32 (CPU) -> bool [rows, vocab_size], True where the token is allowed."""
    words = bitmask.cpu().contiguous().numpy().view(np.uint8)  # little-endian: token j = bit j
    bits = np.unpackbits(words, axis=1, bitorder="little")  # [rows, W * 32] uint8
    return torch.from_numpy(bits[:, :vocab_size].astype(bool))
