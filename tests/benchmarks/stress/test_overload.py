"""The overload phase's own arithmetic: percentiles of refusal latencies and the server-side
p99 bound read from the `turnspec_refusal_seconds` histogram. (The behaviour under overload is
tests/server/test_overload.py; the figures come from `make stress`.)"""

from __future__ import annotations

from turnspec.benchmarks.stress.overload import percentiles, server_refusal_p99

METRICS = """\
# HELP turnspec_refusal_seconds Server receive -> refusal of a turn (admission, limits)
# TYPE turnspec_refusal_seconds histogram
turnspec_refusal_seconds_bucket{code="server_busy",le="0.0001",transport="http"} 10.0
turnspec_refusal_seconds_bucket{code="server_busy",le="0.00025",transport="http"} 98.0
turnspec_refusal_seconds_bucket{code="server_busy",le="0.0005",transport="http"} 99.0
turnspec_refusal_seconds_bucket{code="server_busy",le="0.001",transport="http"} 100.0
turnspec_refusal_seconds_bucket{code="server_busy",le="+Inf",transport="http"} 100.0
turnspec_refusal_seconds_count{code="server_busy",transport="http"} 100.0
turnspec_refusal_seconds_sum{code="server_busy",transport="http"} 0.02
turnspec_refusal_seconds_bucket{code="too_many_tools",le="0.0001",transport="ws"} 0.0
turnspec_refusal_seconds_bucket{code="too_many_tools",le="+Inf",transport="ws"} 3.0
turnspec_refusal_seconds_count{code="too_many_tools",transport="ws"} 3.0
turnspec_refusal_seconds_sum{code="too_many_tools",transport="ws"} 0.3
"""


def test_percentiles_interpolate_between_ranks():
    assert percentiles([]) == {"n": 0, "p50": None, "p99": None, "max": None}
    p = percentiles([4.0, 1.0, 2.0, 3.0])
    assert p == {"n": 4, "p50": 2.5, "p99": 3.97, "max": 4.0}


def test_server_p99_is_the_bucket_bound_holding_it():
    assert server_refusal_p99(METRICS) == {"http": 0.5}  # 99 of 100 within 0.5 ms
    assert server_refusal_p99(METRICS, code="too_many_tools") == {"ws": float("inf")}
