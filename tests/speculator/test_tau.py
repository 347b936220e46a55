"""tau's bootstrap interval over turns (`tau_interval`); the replay itself is pinned against
online decoding in test_train.py."""

from __future__ import annotations

import pytest

from turnspec.speculator.tau import tau_interval


def test_identical_turns_give_a_point_interval() -> None:
    lo, hi = tau_interval([30] * 12, [10] * 12)
    assert lo == pytest.approx(3.0) and hi == pytest.approx(3.0)


def test_a_few_long_predictable_turns_widen_the_interval() -> None:
    # 14 short confirmations at tau 2 and two 160-token loops at tau ~14.5 (the held-out shape)
    tokens, steps = [20] * 14 + [159, 159], [10] * 14 + [11, 11]
    tau = sum(tokens) / sum(steps)
    lo, hi = tau_interval(tokens, steps)
    assert lo < tau < hi
    assert lo < 3.0 and hi > 5.0          # a 16-turn tau of ~3.7 is consistent with 2.x .. 5.x
    wide = hi - lo
    lo2, hi2 = tau_interval(tokens * 16, steps * 16)  # same mix, 16x the turns: ~4x narrower
    assert lo2 < tau < hi2 and hi2 - lo2 < wide / 2.5


def test_seeded_and_checked() -> None:
    assert tau_interval([5, 9, 40], [3, 4, 5]) == tau_interval([5, 9, 40], [3, 4, 5])
    with pytest.raises(ValueError, match="one of each per sequence"):
        tau_interval([1, 2], [1])
    with pytest.raises(ValueError, match="0 < level < 1"):
        tau_interval([1], [1], level=1.0)
