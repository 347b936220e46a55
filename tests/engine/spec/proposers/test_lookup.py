"""Prompt-lookup continuations: longest matching suffix, latest occurrence, bounded length, and
how far back the chosen source matches."""

from __future__ import annotations

import pytest

from turnspec.engine.spec.proposers.lookup import PromptLookup, ngram_lookup


def continuation(tokens: list[int], max_len: int, **sizes: int) -> list[int]:
    """The continuation alone, as the tests below read it."""
    return ngram_lookup(tokens, max_len, **sizes)[0]


def test_continues_the_latest_longest_match() -> None:
    toks = [5, 6, 7, 1, 5, 6, 7, 2, 9, 6, 7]
    # suffix [6, 7]: latest earlier occurrence at 5..6 -> continues [2, 9, 6]
    assert continuation(toks, 3) == [2, 9, 6]
    # a longer match wins over a later shorter one: suffix [5, 6, 7] only occurs at 0..2
    toks2 = [5, 6, 7, 1, 6, 7, 2, 5, 6, 7]
    assert continuation(toks2, 2) == [1, 6]
    # capped at 2-grams, the later [6, 7] at 4..5 is the latest match
    assert continuation(toks2, 2, ngram_min=2, ngram_max=2) == [2, 5]


def test_no_match_and_bounds() -> None:
    assert continuation([1, 2, 3, 4], 5) == []          # no earlier occurrence
    assert continuation([1, 2, 9, 2], 5) == []          # [9, 2] never seen before
    assert continuation([3, 4, 8, 3, 4], 1) == [8]      # max_len caps the copy
    assert continuation([3, 4, 3, 4], 9) == [3, 4]      # never past the anchor
    assert continuation([7], 4) == []
    with pytest.raises(ValueError, match="ngram_min"):
        continuation([1, 2], 2, ngram_min=3, ngram_max=2)


def test_the_match_is_counted_back_past_the_ngram_size() -> None:
    call = [40, 41, 42, 43, 44, 45, 46, 47]               # an earlier tool call
    toks = [1, *call, 9, 9, 40, 41, 42, 43, 44, 45, 46]   # the same call again, 7 tokens in
    cont, match = ngram_lookup(toks, 3)
    assert cont == [47, 9, 9] and cont == continuation(toks, 3)
    assert match == 7                                     # past ngram_max=4
    assert ngram_lookup(toks, 3, match_cap=5)[1] == 5
    assert ngram_lookup([3, 8, 1, 3, 8], 2) == ([1, 3], 2)  # a bare 2-gram match
    assert ngram_lookup([1, 2, 3], 2) == ([], 0)


def test_the_proposer_returns_the_continuation_and_its_match() -> None:
    toks = [9, 1, 2, 3, 4, 5, 8, 1, 2, 3]
    got = PromptLookup().propose(toks, 2)
    assert got.tokens == [4, 5] and got.match == 3   # [1, 2, 3] matched, then 9 and 8 differ
    assert PromptLookup().propose((7, 7), 3).tokens == [] and PromptLookup().propose([1, 2], 3).match == 0
