"""The first-sentence rule (tools_grammar/sentence.py) that the server's `ttfs_ms` and the load
test's client-side time to first sentence share."""

from __future__ import annotations

import pytest

from turnspec.tools_grammar.sentence import SentenceWatch


@pytest.mark.parametrize(("pieces", "done_at"), [
    (["Sure", ".", " I", " can"], 2),            # '.' then a space: done on the space's piece
    (["Sure.", " I can help."], 1),
    (["It costs 3", ".5 dollars", ". OK"], 2),   # "3.5" is not a sentence end
    (["It costs 3", ".5 dollars", " today"], None),
    (["Hello", "\n", "there"], 1),               # newline after text
    (["\n", "\n", "Hi!", " Bye"], 3),            # leading newlines do not count
    (["\n", "Hi"], None),                        # a newline before any text is not a clause
    (["Okay?", "\t", "x"], 1),                   # any whitespace after the terminator
    ([". ", "so"], None),                        # a terminator before any text ends nothing
    (["Really?", "Yes"], None),                  # no space after '?' yet: not complete
    (["um ", "let me check"], None),
])
def test_first_sentence_needs_its_terminator_and_a_space(pieces: list[str],
                                                         done_at: int | None) -> None:
    w = SentenceWatch()
    hits = [i for i, p in enumerate(pieces) if w.feed(p)]
    assert hits == ([] if done_at is None else [done_at])
    assert w.done == (done_at is not None)


def test_a_trailing_terminator_completes_the_sentence_at_the_end() -> None:
    w = SentenceWatch()
    assert not w.feed("All set.")
    assert w.finish() and not w.finish()  # once
    w = SentenceWatch()
    assert not w.feed("all set") and not w.finish()


def test_a_completed_watch_reports_once() -> None:
    w = SentenceWatch()
    assert w.feed("Yes. ")
    assert not w.feed("More. Text. ") and not w.finish()
