"""Incremental detokenization with stop strings.

Text is re-decoded from a small window of recent tokens (vLLM's prefix/read offsets), so each
step costs O(window), and a partial UTF-8 sequence ("\ufffd" at the end) is held back until
the next token completes it. Stop strings hold back up to len(longest stop) - 1 characters so
that a stop string split across tokens is never streamed.
"""

from __future__ import annotations

from collections.abc import Sequence


class IncrementalDetokenizer:
    def __init__(self, tokenizer, stop: Sequence[str] = (), skip_ids: frozenset[int] = frozenset()) -> None:
        self.tok = tokenizer
        self.stop = tuple(stop)
        self.holdback = max((len(s) for s in self.stop), default=1) - 1
        self.skip_ids = skip_ids
        self.ids: list[int] = []
        self.prefix_offset = 0
        self.read_offset = 0
        self.text = ""  # all decoded text so far (after stop truncation)
        self.emitted = 0  # characters of self.text already handed out
        self.stopped = False

    def _decode(self, ids: list[int]) -> str:
        return self.tok.decode(ids, skip_special_tokens=False)

    def add(self, token_ids: Sequence[int]) -> None:
        """Append tokens (stop/special tokens in `skip_ids` contribute no text)."""
        for t in token_ids:
            if self.stopped:
                return
            if t in self.skip_ids:
                continue
            self.ids.append(t)
            prefix = self._decode(self.ids[self.prefix_offset:self.read_offset])
            full = self._decode(self.ids[self.prefix_offset:])
            if full.endswith("\ufffd"):
                continue  # incomplete UTF-8 byte sequence: wait for the next token
            new = full[len(prefix):]
            self.prefix_offset = self.read_offset
            self.read_offset = len(self.ids)
            self._append_text(new)

    def _append_text(self, new: str) -> None:
        if not new:
            return
        start = max(0, len(self.text) - self.holdback)
        self.text += new
        for s in self.stop:
            i = self.text.find(s, start)
            if i >= 0:
                self.text = self.text[:i]
                self.stopped = True
        # (multiple stops: each truncation only shortens, the earliest wins)

    def take(self, final: bool = False) -> str:
        """Text not yet emitted; holds back a possible stop-string prefix unless final."""
        limit = len(self.text) if (final or self.stopped) else max(self.emitted, len(self.text) - self.holdback)
        out = self.text[self.emitted:limit]
        self.emitted = limit
        return out
