"""Budget-aware tool calls: steer a required or named call so it closes within max_tokens.

Under a grammar a small model writes free strings up to their cap (SmolLM2 pads to the 64
characters OutputBounds allows, one digit per token), so at a voice-sized budget a forced call
can be cut mid-string and arrive as broken JSON. Decode-time steering, per request:

    closing path  the tokens a fixed, model-free policy writes from the current grammar state
                  to the end (stop token included): the grammar's forced text (jump-forward)
                  when it has any, else a closing `"`, `}` or `]` when allowed, else the
                  longest allowed token (one shortest-path guess per choice). Its length is
                  `need`: the call can end within `need` tokens from here.
    steering      at a position with `remaining` tokens left (this one included):
                  - few tokens allowed (a tool name, an enum, a digit; <= SMALL) and the budget
                    within WATCH of `need`: keep only the tokens after which the closing path
                    still fits (exact: the invariant need <= remaining carries to the next
                    position, since the policy is deterministic);
                  - many allowed (free string content, which leaves `need` as it is) and
                    `need + MARGIN >= remaining`: inside a string that may close here, content
                    without a quote or escape plus the closing quote while `need < remaining`
                    (exact: the model writes on until the closing just fits); elsewhere, or once
                    `need == remaining`, only the path's next token (the model is forced to
                    close the string, then the call).
The mask is a function of the prefix and the budget left, so plain decoding and a speculative
verify (row k: remaining - k) build the same masks: speculation stays lossless.
The policy's path is a closing, not always the shortest one; the guarantee is that a call
closes whenever the budget at the first position holds that path (docs/voice-defaults.md).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import xgrammar as xgr

MARGIN = 8  # a free-content token can raise `need` by about this much (`","` opening a key)
WATCH = 48  # look ahead over small choices once the budget is this close to `need`
SMALL = 32  # a position allowing at most this many tokens is a choice worth a lookahead
_CLOSERS = ('"', "}", "]")
_FALLBACK = tuple("0aA ")  # one-character content tokens for a many-token position


class CloseVocab:
    """What the closing policy needs to know about a tokenizer's tokens (built once)."""

    def __init__(self, decoded_vocab: list[bytes], vocab_size: int, stop_token_ids: list[int],
                 encode: Callable[[str], list[int]]) -> None:
        lengths = np.zeros(vocab_size, dtype=np.int32)
        quote_free = np.ones(vocab_size, dtype=bool)
        single: dict[bytes, int] = {}
        for i, b in enumerate(decoded_vocab[:vocab_size]):
            lengths[i] = len(b)
            quote_free[i] = b'"' not in b
            if len(b) == 1 and b not in single:
                single[b] = i
        self.lengths = lengths
        self.quote_free = quote_free  # a token that cannot end or start a JSON string
        # string content that leaves the closing path as it is (no quote, no escape): packed
        # like a mask row, to intersect with one
        content = quote_free & np.array([b"\\" not in b for b in decoded_vocab[:vocab_size]]
                                        + [False] * (vocab_size - len(decoded_vocab)), dtype=bool)
        packed = np.packbits(content, bitorder="little")
        packed = np.pad(packed, (0, -len(packed) % 4))
        self.content_words = packed.view(np.int32)
        self.closers = [single[c.encode()] for c in _CLOSERS if c.encode() in single]
        self.quote = single.get(b'"', -1)
        self.fallback = [single[c.encode()] for c in _FALLBACK if c.encode() in single]
        self.stop_ids = list(stop_token_ids)
        self.vocab_size = vocab_size
        self._encode = encode
        self._forced: dict[str, list[int]] = {}

    def encode_forced(self, text: str) -> list[int]:
        toks = self._forced.get(text)
        if toks is None:
            toks = self._forced[text] = list(self._encode(text))
        return toks


def _bit(words: np.ndarray, token: int) -> bool:
    return bool((int(words[token >> 5]) >> (token & 31)) & 1)


def few_allowed(words: np.ndarray, vocab_size: int) -> np.ndarray | None:
    """The token ids a bitmask row [W] int32 allows when at most SMALL, else None (cheap:
    more than SMALL nonzero words already means more than SMALL tokens)."""
    idx = np.flatnonzero(words)
    if len(idx) > SMALL:
        return None
    ids = allowed_ids(words, vocab_size, idx)
    return ids if len(ids) <= SMALL else None


def allowed_ids(words: np.ndarray, vocab_size: int, idx: np.ndarray | None = None) -> np.ndarray:
    """The token ids a bitmask row [W] int32 allows (cheap when few words are set)."""
    idx = np.flatnonzero(words) if idx is None else idx
    bits = np.unpackbits(words[idx].view(np.uint8).reshape(-1, 4), axis=1, bitorder="little")
    ids = (idx[:, None] * 32 + np.arange(32)[None, :])[bits.astype(bool)]
    return ids[ids < vocab_size]


class Closer:
    """The closing policy over one grammar (shared scratch; one engine thread uses it)."""

    def __init__(self, vocab: CloseVocab) -> None:
        self.vocab = vocab
        self._scratch = xgr.allocate_token_bitmask(1, vocab.vocab_size)  # [1, W] int32

    def path(self, matcher: xgr.GrammarMatcher, limit: int = 1024) -> list[int] | None:
        """The closing path from `matcher`'s state (left unchanged), or None past `limit`."""
        m, v = matcher.fork(), self.vocab
        words = self._scratch[0].numpy()
        path: list[int] = []
        while len(path) < limit:
            m.fill_next_token_bitmask(self._scratch, 0)
            stop = next((s for s in v.stop_ids if _bit(words, s)), None)
            if stop is not None:
                return path + [stop]
            forced = m.find_jump_forward_string()
            if forced:
                n = 0
                for t in v.encode_forced(forced):
                    if not m.accept_token(t):
                        break
                    path.append(t)
                    n += 1
                if n:
                    continue
            t = self.choose(words)
            if t is None or not m.accept_token(t):
                return None  # nothing allowed: a dead state (should not happen in a grammar)
            path.append(t)
        return None

    def choose(self, words: np.ndarray) -> int | None:
        """The policy's token at a state whose mask row is `words`."""
        v = self.vocab
        for c in v.closers:
            if _bit(words, c):
                return c
        ids = few_allowed(words, v.vocab_size)
        if ids is None:  # free content: any one-character token makes progress
            for c in v.fallback:
                if _bit(words, c):
                    return c
            ids = allowed_ids(words, v.vocab_size)
        if not len(ids):
            return None
        return int(ids[np.argmax(v.lengths[ids])])  # the first of the longest


class BudgetSteer:
    """Per request: narrows mask rows so a required/named call closes within the budget."""

    __slots__ = ("closer", "_at", "_path", "_exact")

    def __init__(self, closer: Closer) -> None:
        self.closer = closer
        self._at: list[int] = []  # the history the cached path starts from
        self._path: list[int] | None = None
        self._exact = False

    def _closing(self, m: xgr.GrammarMatcher, history: list[int], words: np.ndarray,
                 fresh: bool) -> list[int] | None:
        """The closing path from the state after `history`: the cached one when `history`
        followed it (exact) or only added string content since (assumed unchanged, checked
        to be allowed), else computed now."""
        at, path = self._at, self._path
        if not fresh and path is not None and history[:len(at)] == at:
            delta = history[len(at):]
            if delta == path[:len(delta)]:
                return path[len(delta):]
            if path and path[0] == self.closer.vocab.quote and _bit(words, path[0]) \
                    and all(self.closer.vocab.quote_free[t] for t in delta):
                self._exact = False
                return path
        self._at, self._path, self._exact = list(history), self.closer.path(m), True
        return self._path

    def narrow(self, m: xgr.GrammarMatcher, words: np.ndarray, remaining: int,
               history: list[int]) -> None:
        """Narrow `words` (the grammar's mask row at the state after `history`, in place) so
        the call can still close within `remaining` tokens, this position's included."""
        path = self._closing(m, history, words, fresh=False)
        if path is None:
            return
        need = len(path)
        if need + max(MARGIN, WATCH) < remaining:
            return
        ids = few_allowed(words, self.closer.vocab.vocab_size)
        if ids is not None and len(ids) > 1:
            keep = [t for t in ids.tolist() if self._fits_after(m, t, remaining - 1)]
            if keep:
                _only(words, keep)
                return
        if need + MARGIN >= remaining:
            if not self._exact:
                path = self._closing(m, history, words, fresh=True)
            if not path:
                return
            if path[0] == self.closer.vocab.quote and len(path) < remaining:
                # inside a free string that may close here: content leaves the path as it is,
                # so the model may write on while one more token still leaves room for it
                quote = path[0]
                words &= self.closer.vocab.content_words[:len(words)]
                words[quote >> 5] |= _word_bit(quote)
            else:
                _only(words, [path[0]])

    def _fits_after(self, m: xgr.GrammarMatcher, token: int, remaining: int) -> bool:
        if token in self.closer.vocab.stop_ids:
            return True
        f = m.fork()
        if not f.accept_token(token):
            return False
        rest = self.closer.path(f, limit=remaining + 1)
        return rest is not None and len(rest) <= remaining


def _word_bit(token: int) -> int:
    bit = 1 << (token & 31)
    return bit - (1 << 32) if bit >= 1 << 31 else bit  # int32 two's complement


def _only(words: np.ndarray, tokens: list[int]) -> None:
    """Rewrite a mask row to allow exactly `tokens`."""
    words[:] = 0
    for t in tokens:
        words[t >> 5] |= _word_bit(t)
