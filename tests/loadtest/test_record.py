"""The client's record of one request: time to first sentence by the server's rule
(tools_grammar/sentence.py, tested in tests/tools_grammar/test_sentence.py), E2E at the
terminal event."""

from __future__ import annotations

from turnspec.loadtest.record import RequestRecord


def test_ttfs_is_the_chunk_that_completes_the_first_sentence(monkeypatch):
    ticks = iter([4.0, 6.0, 9.0])
    monkeypatch.setattr(RequestRecord, "now_ms", lambda self: next(ticks))
    r = RequestRecord("ws")
    r.begin()
    r.text_chunk("Sure")   # 4
    r.text_chunk(".")      # 6: a terminator, the next character still unknown
    r.text_chunk(" What")  # 9: the space completes it
    assert r.ttfs_ms == 9.0


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
