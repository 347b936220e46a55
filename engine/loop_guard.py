"""The repetition guard: ends a request whose output has started to loop.

A small model decoding greedily can fall into a cycle ("I'm not a dentist. I'm a chatbot
designed to assist with dental-related tasks. I'm not a dentist. ...") and run to max_tokens;
a voice user hears the loop, then silence. `LoopGuard` (the request's thresholds, on
`SamplingParams.loop_guard`) says when repetition counts as a loop; `LoopDetector` (one per
request, in the engine's postprocess) sees each emitted token once and answers in O(ngram).

The rule: the output's latest `ngram` tokens have now occurred `repeats` times in its last
`window` tokens. Exact n-gram repeats, not similarity: a phrase said three times word for word
is what a loop looks like, and legit voice replies (lists, read-backs, confirmations) do not
repeat a 12-token span verbatim three times (docs/voice-defaults.md has the sweep).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

LOOP_GUARD_STOP = "loop_guard"  # Delta.stop_reason when the guard ended a request


@dataclass(slots=True, frozen=True)
class LoopGuard:
    """When an output counts as looping: its latest `ngram` tokens occur for the `repeats`-th
    time within its last `window` tokens (0: the whole output)."""

    ngram: int = 12
    repeats: int = 3
    window: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.ngram, int) or self.ngram < 2:
            raise ValueError(f"loop_guard.ngram: expected an integer >= 2, got {self.ngram!r}")
        if not isinstance(self.repeats, int) or self.repeats < 2:
            raise ValueError(f"loop_guard.repeats: expected an integer >= 2, got {self.repeats!r}")
        if not isinstance(self.window, int) or self.window < 0:
            raise ValueError(f"loop_guard.window: expected an integer >= 0 (0: whole output), "
                             f"got {self.window!r}")
        if self.window and self.window < self.ngram * self.repeats:
            raise ValueError(f"loop_guard.window: {self.window} tokens cannot hold "
                             f"{self.repeats} copies of a {self.ngram}-gram; expected 0 or >= "
                             f"{self.ngram * self.repeats}")


class LoopDetector:
    """Per-request state: counts of every `ngram`-token span of the output so far."""

    __slots__ = ("guard", "_tokens", "_counts")

    def __init__(self, guard: LoopGuard) -> None:
        self.guard = guard
        self._tokens: list[int] = []
        self._counts: Counter[tuple[int, ...]] = Counter()

    def push(self, token: int) -> bool:
        """Add one emitted token; True when the output now loops (this token completed the
        `repeats`-th occurrence of its n-gram)."""
        toks, n = self._tokens, self.guard.ngram
        toks.append(token)
        if len(toks) < n:
            return False
        gram = tuple(toks[-n:])
        self._counts[gram] += 1
        w = self.guard.window
        if w and len(toks) > w:  # the span starting just outside the window leaves it
            start = len(toks) - w - 1
            old = tuple(toks[start:start + n])
            self._counts[old] -= 1
        return self._counts[gram] >= self.guard.repeats

    @property
    def emitted(self) -> int:
        return len(self._tokens)


def first_loop(tokens: Sequence[int], guard: LoopGuard,
               may_end: Sequence[bool] | None = None) -> int | None:
    """How many of `tokens` a request with `guard` would emit before the guard stops it (the
    index of the detecting token + 1), or None if it never fires. `may_end[i]`: the output may
    end right after token i (the engine's grammar check; None: everywhere). Replays the
    detector, so offline sweeps see exactly what the engine would."""
    if may_end is not None and len(may_end) != len(tokens):
        raise ValueError(f"may_end: expected one flag per token ({len(tokens)}), got "
                         f"{len(may_end)}")
    det = LoopDetector(guard)
    for i, t in enumerate(tokens):
        if det.push(t) and (may_end is None or may_end[i]):
            return i + 1
    return None
