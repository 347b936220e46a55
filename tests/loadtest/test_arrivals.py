"""Open-loop schedules: seeded, the requested mean rate, gamma shape, cut by duration/count."""

from __future__ import annotations

import itertools
import statistics

import pytest

from turnspec.loadtest.arrivals import gaps, schedule


def test_gaps_are_seeded():
    a = list(itertools.islice(gaps(10.0, seed=3), 50))
    assert a == list(itertools.islice(gaps(10.0, seed=3), 50))
    assert a != list(itertools.islice(gaps(10.0, seed=4), 50))


@pytest.mark.parametrize("burstiness", [1.0, 0.5, 4.0])
def test_mean_gap_is_one_over_rate(burstiness):
    xs = list(itertools.islice(gaps(20.0, burstiness, seed=0), 20_000))
    assert statistics.fmean(xs) == pytest.approx(1 / 20.0, rel=0.03)
    # gamma(k, theta): coefficient of variation 1/sqrt(k); 1 for Poisson's exponential gaps
    cv = statistics.pstdev(xs) / statistics.fmean(xs)
    assert cv == pytest.approx(burstiness ** -0.5, rel=0.05)


def test_schedule_starts_at_zero_and_stops():
    times = list(schedule(100.0, seed=1, duration_s=2.0))
    assert times[0] == 0.0 and all(b > a for a, b in itertools.pairwise(times))
    assert times[-1] < 2.0 and 150 < len(times) < 250  # ~200 at 100/s
    assert len(list(schedule(100.0, count=7))) == 7
    assert len(list(schedule(1.0, duration_s=1000.0, count=3))) == 3


def test_bad_rate():
    with pytest.raises(ValueError, match="rate > 0"):
        next(gaps(0.0))
