"""Statistics against hand-computed values: linear-interpolation percentiles, summaries, TPOT,
the server parts and breakdown, goodput."""

from __future__ import annotations

import pytest

from turnspec.loadtest.record import RequestRecord
from turnspec.loadtest.stats import (
    Slo,
    breakdown_row,
    goodput,
    host_split,
    mean_itl,
    percentile,
    server_parts,
    summarize,
    tpot,
)


def rec(*, ttft: float = 100.0, e2e: float = 500.0, chunks: list[float] | None = None,
        tokens: int = 5, ok: bool = True, text: str = "", ttfs: float | None = None,
        timing: dict | None = None, rtt: float | None = None,
        cancelled: bool = False) -> RequestRecord:
    r = RequestRecord("http", ok=ok, ttft_ms=ttft, e2e_ms=e2e, text=text, ttfs_ms=ttfs,
                      chunk_ms=chunks if chunks is not None else [ttft],
                      usage={"completion_tokens": tokens}, rtt_ms=rtt)
    if timing is not None:
        r.turnspec = {"timing": timing}
    if cancelled:
        r.cancel_ms = ttft
    return r


@pytest.mark.parametrize(("values", "q", "expected"), [
    ([1, 2, 3, 4], 50, 2.5),            # position 1.5: halfway between 2 and 3
    ([1, 2, 3, 4], 90, 3.7),            # position 2.7: 3 + 0.7 * (4 - 3)
    ([1, 2, 3, 4], 99, 3.97),           # position 2.97
    ([10, 20, 30, 40, 50], 90, 46.0),   # position 3.6: 40 + 0.6 * 10
    ([5, 1, 4, 2, 3], 50, 3.0),         # unsorted input
    ([7.0], 99, 7.0),
    ([1, 2, 3, 4], 0, 1.0),
    ([1, 2, 3, 4], 100, 4.0),
    (list(range(1, 101)), 99, 99.01),   # position 98.01 -> 99 + 0.01
])
def test_percentile_interpolates_linearly_between_closest_ranks(values, q, expected):
    assert percentile(values, q) == pytest.approx(expected)


def test_percentile_rejects_empty_input_and_bad_q():
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)
    with pytest.raises(ValueError, match="q in"):
        percentile([1.0], 101)


def test_summarize_by_hand_and_empty():
    s = summarize([4.0, None, 1.0, 3.0, 2.0])
    assert s == {"n": 4, "p50": 2.5, "p90": pytest.approx(3.7), "p99": pytest.approx(3.97),
                 "mean": 2.5, "min": 1.0, "max": 4.0}
    assert summarize([]) == {"n": 0, "p50": None, "p90": None, "p99": None, "mean": None,
                             "min": None, "max": None}


def test_tpot_and_mean_itl():
    r = rec(ttft=100.0, e2e=500.0, tokens=5, chunks=[100.0, 150.0, 300.0, 490.0])
    assert tpot(r) == pytest.approx(100.0)       # (500 - 100) / (5 - 1)
    assert mean_itl(r) == pytest.approx(130.0)   # (490 - 100) / 3 gaps
    assert r.itl_ms == pytest.approx([50.0, 150.0, 190.0])
    assert tpot(rec(tokens=1)) is None and mean_itl(rec(chunks=[5.0])) is None


TIMING = {"server_e2e_ms": 480.0, "queue_ms": 10.0, "prefill_ms": 70.0, "decode_ms": 380.0}


def test_server_parts_and_breakdown_add_up():
    parts = server_parts(rec(timing=TIMING))
    assert parts == {"queue_ms": 10.0, "prefill_ms": 70.0, "decode_ms": 380.0,
                     "server_e2e_ms": 480.0, "host_overhead_ms": 20.0}  # 480 - 460
    row = breakdown_row(rec(e2e=483.0, rtt=2.0, timing=TIMING))
    assert row is not None
    assert row["residual_ms"] == pytest.approx(1.0)  # 483 - (2 + 20 + 10 + 70 + 380)
    assert breakdown_row(rec(timing=TIMING, cancelled=True)) is None
    assert breakdown_row(rec(timing=TIMING, ok=False)) is None
    assert breakdown_row(rec()) is None  # no timing block


def test_host_split_adds_up_to_the_host_overhead():
    timing = TIMING | {"receive_ms": 0.5, "render_ms": 3.0, "grammar_ms": 1.5,
                       "first_token_ms": 84.0, "engine_queue_ms": 6.0}
    split = host_split(rec(timing=timing))
    assert split is not None
    assert split["handoff_ms"] == pytest.approx(8.0)     # 84 - 6 queued - 70 prefill
    assert split["delivery_ms"] == pytest.approx(7.0)    # 20 - (0.5 + 3 + 1.5 + 8)
    assert sum(split.values()) == pytest.approx(20.0)    # the host overhead, 480 - 460
    # an engine whose first token is its queue plus prefill (the embedded one) hands off in 0
    assert host_split(rec(timing=timing | {"first_token_ms": 70.0}))["handoff_ms"] == 0.0
    # the template's wait on a tokenizing thread is apart from its work, within render_ms
    waited = host_split(rec(timing=timing | {"render_wait_ms": 1.0}))
    assert waited["render_ms"] == pytest.approx(2.0) and waited["render_wait_ms"] == 1.0
    assert waited["delivery_ms"] == pytest.approx(7.0) and split["render_wait_ms"] == 0.0
    assert host_split(rec(timing=TIMING)) is None  # a server that does not say first_token_ms
    assert host_split(rec()) is None


def test_slo_parse():
    assert Slo.parse("ttft:300,itl:50") == Slo(ttft_ms=300.0, itl_ms=50.0)
    assert Slo.parse(None) is None
    with pytest.raises(ValueError, match="KEY in ttft, ttfs, itl, e2e"):
        Slo.parse("tpot:30")
    with pytest.raises(ValueError, match="milliseconds"):
        Slo.parse("ttft:fast")
    with pytest.raises(ValueError, match="> 0"):
        Slo.parse("ttft:0")


def test_goodput_by_hand():
    slo = Slo(ttft_ms=200.0, ttfs_ms=400.0, itl_ms=60.0, e2e_ms=1000.0)
    turns = [
        rec(ttft=150, e2e=900, chunks=[150, 200, 250], text="Hi. There", ttfs=300),  # good
        rec(ttft=250, e2e=900, chunks=[250, 300]),                   # TTFT too slow
        rec(ttft=150, e2e=900, chunks=[150, 300]),                   # mean ITL 150 > 60
        rec(ttft=150, e2e=1200, chunks=[150, 200]),                  # E2E too slow
        rec(ttft=150, e2e=350, chunks=[150, 200], text="One clause", ttfs=None),  # E2E as TTFS
        rec(ttft=150, e2e=900, chunks=[150, 200], text="Long reply", ttfs=None),  # 900 > 400
        rec(ttft=150, e2e=900, chunks=[150, 200], text="", ttfs=None),  # tool call only: good
        rec(ok=False),                                               # an error is not good
        rec(ttft=10, e2e=20, chunks=[10, 15], cancelled=True),       # barge-in: left out
    ]
    g = goodput(turns, slo, duration_s=4.0)
    assert g["good"] == 3 and g["turns"] == 8
    assert g["fraction"] == pytest.approx(3 / 8) and g["per_s"] == pytest.approx(0.75)
    assert g["slo"] == {"ttft_ms": 200.0, "ttfs_ms": 400.0, "itl_ms": 60.0, "e2e_ms": 1000.0}
