"""loadtest/run_config.py: a run's configuration refuses what it cannot run, naming the flag
and what it expected."""

from __future__ import annotations

import pytest

from turnspec.loadtest.run_config import RunConfig


def test_one_loop_and_an_end_are_required() -> None:
    with pytest.raises(ValueError, match="exactly one of --concurrency N"):
        RunConfig(duration_s=5)
    with pytest.raises(ValueError, match="exactly one of --concurrency N"):
        RunConfig(concurrency=2, rate=1.0, duration_s=5)
    with pytest.raises(ValueError, match="expected --duration S or --requests N"):
        RunConfig(concurrency=2)
    assert RunConfig(rate=3.0, requests=10).rate == 3.0


@pytest.mark.parametrize(("kwargs", "flag"), [
    ({"concurrency": 0}, "--concurrency: expected >= 1"),
    ({"rate": 0.0, "concurrency": None}, "--rate: expected turns per second > 0"),
    ({"burstiness": 0.0}, "--burstiness: expected > 0"),
    ({"duration_s": -1.0}, "--duration: expected seconds > 0"),
    ({"barge_in": 1.5}, "--barge-in in \\[0, 1\\]"),
    ({"tool_choice": "required"}, "--tool-choice: expected script or auto"),
    ({"tool_mode": "json"}, "--tool-mode: expected grammar, prompt or none"),
    ({"burn_loop_ms": 100.0}, "0 <= --burn-loop-ms < 100"),
])
def test_bad_values_name_their_flag(kwargs: dict, flag: str) -> None:
    with pytest.raises(ValueError, match=flag):
        RunConfig(**{"concurrency": 1, "duration_s": 5.0, **kwargs})
