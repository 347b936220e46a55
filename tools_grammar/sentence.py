"""When the first spoken sentence of a streamed reply is complete: what a TTS segmenter waits
for before it can speak. One rule for the server's `ttfs_ms` (server/timing.py) and the load
test's client-side time to first sentence (loadtest/record.py), so the two agree by
construction. It sits here, beside the streaming tool-call parser, because both the server and
the load test (which may import only tools_grammar, workloads and the wire contract) use it.
"""

from __future__ import annotations

_TERMINATORS = ".!?"


class SentenceWatch:
    """Finds when the first spoken clause is complete: a `.`, `?` or `!` after some text and
    followed by whitespace, or a newline after some text, or the end of the turn right after a
    terminator. A terminator must be followed by a space to count, so "3.5" or "Dr.Smith" does
    not end a sentence while the next character is still unknown."""

    __slots__ = ("done", "_text", "_pending")

    def __init__(self) -> None:
        self.done = False
        self._text = False     # some non-space text seen
        self._pending = False  # the last character was a terminator after text

    def feed(self, text: str) -> bool:
        """True if the first sentence completed inside `text` (once per watch)."""
        if self.done:
            return False
        for ch in text:
            if (self._pending and ch.isspace()) or (ch == "\n" and self._text):
                self.done = True
                return True
            self._pending = ch in _TERMINATORS and self._text
            self._text = self._text or not ch.isspace()
        return False

    def finish(self) -> bool:
        """At the end of the turn: a trailing terminator completes the sentence."""
        if not self.done and self._pending:
            self.done = True
            return True
        return False
