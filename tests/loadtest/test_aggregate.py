"""From records to the result: which turns count where, the breakdown rows per percentile,
errors by type, and the saturation flag when the client's loop is starved on purpose."""

from __future__ import annotations

import asyncio

import pytest

from turnspec.loadtest.aggregate import breakdown, build_result, error_type, metrics, saturation
from turnspec.loadtest.monitor import LoopMonitor, burn_loop
from turnspec.loadtest.run_config import RunResult

from .test_stats import rec


def timed(e2e: float, rtt: float, decode: float) -> dict:
    return {"server_e2e_ms": e2e - rtt - 1.0, "queue_ms": 2.0, "prefill_ms": 20.0,
            "decode_ms": decode}


def test_breakdown_rows_are_the_turns_at_each_e2e_percentile():
    # five turns; the band (+-2.5% of 5 turns) is the one turn at rank round(q/100 * 4)
    turns = [rec(e2e=e, rtt=0.5, timing=timed(e, 0.5, e - 40.0)) for e in (300, 100, 500, 200, 400)]
    b = breakdown(turns)
    assert b["p50"]["e2e_ms"] == 300 and b["p90"]["e2e_ms"] == 500 and b["p99"]["e2e_ms"] == 500
    row = b["p50"]
    # server e2e 298.5 = host + 2 + 20 + 260 -> host 16.5; residual 300 - (0.5+16.5+2+20+260) = 1
    assert row["host_overhead_ms"] == pytest.approx(16.5)
    assert row["residual_ms"] == pytest.approx(1.0) and row["turns"] == 1
    parts = ("rtt_ms", "host_overhead_ms", "queue_ms", "prefill_ms", "decode_ms", "residual_ms")
    for r in b.values():
        assert sum(r[k] for k in parts) == pytest.approx(r["e2e_ms"])


def test_breakdown_band_averages_neighbouring_turns():
    turns = [rec(e2e=float(e), rtt=0.0, timing=timed(float(e), 0.0, 10.0)) for e in range(100, 300)]
    row = breakdown(turns)["p50"]  # 200 turns: center rank 100 (e2e 200), +-5 ranks
    assert row["turns"] == 11 and row["e2e_ms"] == pytest.approx(200.0)


def test_which_turns_count_where():
    ok = rec(ttft=50, e2e=400, chunks=[50, 60, 70], tokens=3, timing=timed(400, 0, 300),
             rtt=1.0)
    barged = rec(ttft=30, e2e=90, chunks=[30, 35], timing=timed(90, 0, 50), cancelled=True)
    barged.cancel_to_stop_ms = 4.0
    failed = rec(ok=False)
    failed.error = {"status": 503, "message": "draining"}
    m = metrics([ok, barged, failed], loopback=False)
    assert m["ttft_ms"]["n"] == 2 and m["itl_ms"]["n"] == 3  # the barge-in's TTFT and gap
    assert m["e2e_ms"]["n"] == 1 and m["tpot_ms"]["p50"] == pytest.approx(175.0)
    assert m["cancel_to_stop_ms"]["p50"] == 4.0
    assert m["server_decode_ms"]["n"] == 1 and m["tau"]["n"] == 0
    assert "ttfs_ms" not in m and "tool_call_ms" not in m  # none in this workload
    assert error_type(failed) == "http_503"
    res = build_result(RunResult(records=[ok, barged, failed], wall_s=2.0), url="http://h/v1",
                       transport="http", loopback=False, workload="voice", load={}, args={},
                       workload_errors=["f:3: bad"])
    assert res["requests"]["ok"] == 2 and res["requests"]["errors"] == 2
    assert res["requests"]["errors_by_type"] == {"http_503": 1, "workload_error": 1}
    assert res["requests"]["error_rate"] == pytest.approx(0.5)
    assert res["requests"]["error_examples"] == {"http_503": "draining"}
    assert res["throughput"]["requests_per_s"] == pytest.approx(1.0)


async def test_a_starved_client_is_flagged():
    """Block the loop 50 ms out of every 100: the monitor's timer fires up to 50 ms late."""
    monitor = LoopMonitor()
    monitor.start()
    burner = asyncio.create_task(burn_loop(50.0))
    await asyncio.sleep(1.0)
    burner.cancel()
    await monitor.stop()
    sat = saturation(RunResult(loop_lag_ms=monitor.lags_ms,
                               client_cpu_util=monitor.cpu_util), threshold_ms=10.0)
    assert sat["client_bound"] and sat["loop_lag_ms"]["p99"] > 10.0
    assert "event-loop lag p99" in sat["reasons"][0]
    # which cause is named depends on how much CPU the busy loop got on this machine
    assert f"it used {monitor.cpu_util:.0%} of a core" in sat["cause"]


@pytest.mark.parametrize("cpu, cause", [(0.6, "the client's own work blocks its event loop"),
                                        (0.05, "the client got too little CPU")])
def test_the_cause_follows_the_clients_cpu(cpu, cause):
    sat = saturation(RunResult(loop_lag_ms=[40.0] * 20, client_cpu_util=cpu), threshold_ms=10.0)
    assert sat["client_bound"] and sat["cause"].startswith(cause)
    quiet = saturation(RunResult(loop_lag_ms=[1.0] * 20, client_cpu_util=cpu), threshold_ms=10.0)
    assert not quiet["client_bound"] and quiet["cause"] is None


def test_late_open_loop_arrivals_are_flagged():
    sat = saturation(RunResult(loop_lag_ms=[0.5] * 100, arrival_lag_ms=[1.0] * 90 + [40.0] * 10,
                               client_cpu_util=0.97), threshold_ms=10.0)
    assert sat["client_bound"] and sat["reasons"] == [
        "open-loop arrivals late: lag p99 40.0 ms > 10 ms"]
    assert sat["cause"] == "the client's own work blocks its event loop (it used 97% of a core)"
    assert not saturation(RunResult(loop_lag_ms=[0.5] * 100), 10.0)["client_bound"]


def test_pooled_tau_weighs_turns_by_their_tokens():
    """A 4-token turn in 1 step and a 96-token turn in 48 steps: each turn's τ averages 3.0,
    the tokens per verify step over both are 100 / 49; the report prints the pooled one."""
    short, long_, plain = rec(tokens=4), rec(tokens=96), rec()
    short.turnspec = {"spec": {"verify_steps": 1, "committed_tokens": 4, "tau": 4.0}}
    long_.turnspec = {"spec": {"verify_steps": 48, "committed_tokens": 96, "tau": 2.0}}
    res = build_result(RunResult(records=[short, long_, plain], wall_s=1.0), url="http://h/v1",
                       transport="http", loopback=False, workload="voice", load={
                           "mode": "closed", "concurrency": 1}, args={})
    assert res["metrics"]["tau"]["mean"] == pytest.approx(3.0)
    assert res["throughput"]["tau"] == pytest.approx(100 / 49)
    assert res["metrics"]["server_step_ms"]["n"] == 0  # no decode time in these blocks
    from turnspec.loadtest.report import format_table
    assert "tau 2.04 (all turns)" in format_table(res).splitlines()[1]
    none = build_result(RunResult(records=[plain], wall_s=1.0), url="http://h/v1",
                        transport="http", loopback=False, workload="voice", load={}, args={})
    assert none["throughput"]["tau"] is None


def test_sglangs_two_spans_are_reported_where_a_server_sent_them():
    from turnspec.loadtest.report import ROWS

    with_spans = rec(e2e=100, timing={**timed(100, 0, 60), "engine_in_ms": 3.0,
                                      "first_back_ms": None})
    m = metrics([with_spans, rec(e2e=100, timing=timed(100, 0, 60))], loopback=False)
    assert m["server_engine_in_ms"]["n"] == 1 and m["server_engine_in_ms"]["p50"] == 3.0
    assert "server_first_back_ms" not in m  # no server sent it: no row
    assert {"server_engine_in_ms", "server_first_back_ms"} <= {k for k, _ in ROWS}
