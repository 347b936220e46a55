"""The timing block's parts and the first-sentence rule (server/timing.py), unit level."""

from __future__ import annotations

import pytest

from turnspec.engine.protocol import Timing
from turnspec.server.timing import SentenceWatch, TurnClock, stamp, timing_block


@pytest.mark.parametrize(("pieces", "done_at"), [
    (["Sure", ".", " I", " can"], 2),            # '.' then a space: done on the space's piece
    (["Sure.", " I can help."], 1),
    (["It costs 3", ".5 dollars", ". OK"], 2),   # "3.5" is not a sentence end
    (["Hello", "\n", "there"], 1),               # newline after text
    (["\n", "\n", "Hi!", " Bye"], 3),            # leading newlines do not count
    (["Really?", "Yes"], None),                  # no space after '?' yet: not complete
    (["um ", "let me check"], None),
])
def test_first_sentence_needs_its_terminator_and_a_space(pieces, done_at) -> None:
    w = SentenceWatch()
    hits = [i for i, p in enumerate(pieces) if w.feed(p)]
    assert hits == ([] if done_at is None else [done_at])


def test_a_trailing_terminator_completes_the_sentence_at_the_end() -> None:
    w = SentenceWatch()
    assert not w.feed("All set.")
    assert w.finish() and not w.finish()  # once
    w = SentenceWatch()
    assert not w.feed("all set") and not w.finish()


def test_the_four_parts_add_up_to_the_server_e2e() -> None:
    clock = TurnClock(received=100.0, received_unix_us=1_700_000_000_000_000)
    clock.hop("receive", 100.0, 100.0005)
    clock.hop("template", 100.001, 100.005)
    clock.hop("grammar", 100.005, 100.0075)
    clock.hop("admission", 100.0075, 100.0175)
    clock.first_output, clock.first_sentence = 100.200, 100.350
    engine = Timing(queue_ms=5.0, prefill_ms=120.0, decode_ms=300.0, engine_host_ms=7.5,
                    prompt_tokens=40, cached_tokens=32, prefill_tokens=8, completion_tokens=20)
    block = timing_block(clock, engine)
    assert block["queue_ms"] == 15.0 and block["engine_queue_ms"] == 5.0  # admission + engine
    assert block["render_ms"] == 4.0 and block["receive_ms"] == 0.5
    assert block["grammar_ms"] == 2.5
    assert block["server_ttft_ms"] == 200.0 and block["ttfs_ms"] == 350.0
    assert block["tool_call_ms"] is None and block["engine_host_ms"] == 7.5
    stamp(block, clock, now=100.4567)
    assert block["server_e2e_ms"] == 456.7
    assert block["host_overhead_ms"] == pytest.approx(456.7 - 15.0 - 120.0 - 300.0, abs=1e-9)
    assert block["server_e2e_ms"] == pytest.approx(
        block["host_overhead_ms"] + block["queue_ms"] + block["prefill_ms"]
        + block["decode_ms"], abs=0.002)
