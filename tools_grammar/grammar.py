"""Grammar-constrained tool calls: a matcher per request, and logits masking.

    compiler = GrammarCompiler(tokenizer, vocab_size=config.vocab_size, stop_token_ids=[eos])
    matcher = compiler.matcher(tools, choice, fmt)          # None: unconstrained (compiler.py)
    bitmask = matcher.new_bitmask(block)                    # [block, ceil(V/32)] int32, CPU
    valid = matcher.fill_block_masks(drafts, bitmask)       # row k = mask after drafts[:k]
    apply_bitmask(logits, bitmask)                          # logits [block, V] -> -inf where banned
    ... verify ...; matcher.accept_tokens(committed)        # advance over what was kept

Plain decoding is the block of one: `fill_mask(bitmask, 0)`, sample, `accept(token)`.
Required and named calls are budget-aware: given the tokens left (`remaining=`), the masks steer
the call to close within them (closing.py).
"""

from __future__ import annotations

import numpy as np
import torch
import xgrammar as xgr

from turnspec.tools_grammar.closing import BudgetSteer, Closer


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
