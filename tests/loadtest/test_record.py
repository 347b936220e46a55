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


def test_e2e_ends_at_the_terminal_event_not_at_the_close(monkeypatch):
    ticks = iter([5.0, 9.0, 12.0])
    monkeypatch.setattr(RequestRecord, "now_ms", lambda self: next(ticks))
    r = RequestRecord("grpc")
    r.begin()
    r.text_chunk("Hi.")   # 5
    r.terminal()          # 9: gRPC `complete` / SSE `[DONE]`
    r.terminal()          # a second terminal mark keeps the first
    r.end(True)           # the stream's close comes later; E2E stays at the terminal event
    assert (r.ttft_ms, r.terminal_ms, r.e2e_ms) == (5.0, 9.0, 9.0)


def test_e2e_without_a_terminal_event_ends_at_the_close():
    r = RequestRecord("http")
    r.begin()
    r.end(False)
    assert r.terminal_ms is None and r.e2e_ms is not None
