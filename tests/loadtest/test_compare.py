"""`loadtest compare`: deltas, and a significance note that tells a shift from noise."""

from __future__ import annotations

import json
import random

import pytest

from turnspec.loadtest.compare import bootstrap_delta, compare_files, significance


def sample(mean: float, n: int = 200, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    return [rng.gauss(mean, 5.0) for _ in range(n)]


def test_significance_tells_a_shift_from_noise():
    lo, hi = bootstrap_delta(sample(100), sample(110, seed=1), 50)
    assert 7 < lo < hi < 13  # the true shift is +10
    assert significance(sample(100), sample(110, seed=1), 50).startswith("significant")
    assert significance(sample(100), sample(100, seed=1), 50).startswith("noise")
    assert significance([1.0] * 5, [2.0] * 5, 50) == "too few turns (<10)"


def result(ttft: list[float], client_bound: bool = False) -> dict:
    p50 = sorted(ttft)[len(ttft) // 2]
    return {"target": {"url": "ws://h/v1/responses"}, "workload": "voice",
            "load": {"mode": "closed", "concurrency": 4}, "date": "d",
            "metrics": {"ttft_ms": {"p50": p50, "p90": p50, "p99": p50}},
            "throughput": {"requests_per_s": 2.0, "output_tokens_per_s": 100.0},
            "requests": {"errors": 0}, "samples": {"ttft_ms": ttft},
            "saturation": {"client_bound": client_bound, "reasons": ["event-loop lag"]}}


def test_compare_files(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(result(sample(100))))
    b.write_text(json.dumps(result(sample(120, seed=1), client_bound=True)))
    text = compare_files(a, b)
    row = next(line for line in text.splitlines() if line.startswith("ttft_ms") and " p50" in line)
    assert "significant" in row and "+" in row
    assert "warning: B was client-bound" in text
    (tmp_path / "c.json").write_text("{}")
    with pytest.raises(ValueError, match="loadtest --out"):
        compare_files(a, tmp_path / "c.json")
