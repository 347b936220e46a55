"""The client's time to first sentence follows the server's definition (SentenceWatch)."""

from __future__ import annotations

import pytest

from turnspec.loadtest.record import RequestRecord, SentenceWatch


@pytest.mark.parametrize(("chunks", "done_at"), [
    (["Sure", ".", " What", " time?"], 2),    # the space after the period completes it
    (["It costs 3", ".5 dollars", " today"], None),  # "3.5" is no sentence end
    (["Hello", "\n", "there"], 1),           # a newline after text
    (["\n", "Hi"], None),                    # a newline before any text is not a clause
    (["Okay?", "\t", "x"], 1),
    ([". ", "so"], None),                    # a terminator before any text ends nothing
])
def test_sentence_watch(chunks, done_at):
    w = SentenceWatch()
    hits = [i for i, c in enumerate(chunks) if w.feed(c)]
    assert hits == ([] if done_at is None else [done_at])


def test_a_trailing_terminator_completes_at_the_end():
    r = RequestRecord("ws")
    r.begin()
    r.text_chunk("All set")
    r.text_chunk(".")
    assert r.ttfs_ms is None
    r.end(True)
    assert r.ttfs_ms == r.e2e_ms
