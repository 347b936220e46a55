"""Prompt lookup, a proposer: the continuation of the latest earlier occurrence of
the sequence's last n tokens (n from `ngram_max` down to `ngram_min`).

Why beside the DFlash drafter: voice agents repeat their context (a confirmation read back, an
earlier agent line paraphrased, a tool result spoken), and the drafter has learned to copy only
in the shapes it was trained on; on its worst held-out turns it committed one token per step
through a sentence that stands verbatim three messages up. The planner takes this
continuation instead of the drafter's block when the drafter expects little of its own block
(docs/history/notes/cpu-spec-step.md), or when the source matches a long run of the last tokens
(`ngram_lookup`'s match: a copy in progress) and offers more than the drafter expects
(planner.py `takes_lookup`); with verify branches, the block it passed over is verified too.
Drafts are proposals either way: the target verifies them, so output is unchanged. Host-side: one backwards scan for the last token,
then an n-gram check per hit.
"""

from __future__ import annotations

from collections.abc import Sequence

from turnspec.engine.spec.proposers import Proposal


def ngram_lookup(tokens: Sequence[int], max_len: int, ngram_min: int = 2, ngram_max: int = 4,
                 match_cap: int = 16) -> tuple[list[int], int]:
    """(continuation, match): up to `max_len` tokens that followed the most recent earlier
    occurrence of the longest matching suffix of `tokens` (length ngram_max..ngram_min), and how
    many of the last tokens that source matches, counted on past ngram_max up to match_cap;
    ([], 0) if none. A source that matches the last 6+ tokens is a copy in progress (a tool call
    repeated, a line read back)."""
    if not 1 <= ngram_min <= ngram_max:
        raise ValueError(f"ngram sizes: expected 1 <= ngram_min <= ngram_max, got {ngram_min}, {ngram_max}")
    end = len(tokens) - 1  # the anchor: the last token
    if end < ngram_min or max_len < 1:
        return [], 0
    last = tokens[end]
    best_n, best_j = 0, -1
    for j in range(end - 1, ngram_min - 2, -1):  # latest occurrences first
        if tokens[j] != last:
            continue
        n = 1
        while n < ngram_max and j - n >= 0 and tokens[j - n] == tokens[end - n]:
            n += 1
        if n > best_n:
            best_n, best_j = n, j
            if n == ngram_max:
                break
    if best_n < ngram_min:
        return [], 0
    n = best_n  # the chosen source, matched further back
    while n < match_cap and best_j - n >= 0 and tokens[best_j - n] == tokens[end - n]:
        n += 1
    return list(tokens[best_j + 1 : min(best_j + 1 + max_len, end + 1)]), n


class PromptLookup:
    """The proposer: `ngram_lookup` with its default n-gram sizes."""

    def propose(self, tokens: Sequence[int], width: int) -> Proposal:
        cont, match = ngram_lookup(tokens, width)
        return Proposal(cont, match)
