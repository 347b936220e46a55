"""tau's bootstrap intervals over turns (`tau_interval`, and `tau_difference_interval` for two
drafters on the same turns); the replay itself is pinned against
online decoding in test_train.py."""

from __future__ import annotations

import pytest

from turnspec.speculator.tau import replay_steps, tau_difference_interval, tau_interval


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


def test_a_small_shared_gain_is_told_from_zero_only_when_paired() -> None:
    # turns of very different tau (the spread between turns dominates each tau's own interval);
    # drafter b saves one verify step in every fourth turn
    tokens = [20, 159, 40, 12, 90, 25, 60, 18] * 8
    steps_a = [10, 11, 14, 6, 20, 12, 15, 9] * 8
    steps_b = [s - (i % 4 == 0) for i, s in enumerate(steps_a)]
    gain = sum(tokens) / sum(steps_b) - sum(tokens) / sum(steps_a)
    lo, hi = tau_difference_interval(tokens, steps_a, steps_b)
    assert 0 < lo < gain < hi                       # paired: the gain is above zero
    a_lo, a_hi = tau_interval(tokens, steps_a)
    b_lo, b_hi = tau_interval(tokens, steps_b)
    assert b_lo < a_hi and a_lo < b_hi              # apart: the two intervals overlap
    same = tau_difference_interval(tokens, steps_a, steps_a)
    assert same == pytest.approx((0.0, 0.0))
    with pytest.raises(ValueError, match="one of each per turn"):
        tau_difference_interval([1, 2], [1, 1], [1])


def test_replay_refuses_two_ways_to_choose_the_drafts() -> None:
    """`lookup` (the engine's rule) and `pick` (a caller's choice) exclude each other: one of
    them silently winning would score something other than what was asked."""
    steps = replay_steps(None, None, [], 16, 2048, lookup=True, pick=lambda d, *_: d)
    with pytest.raises(ValueError, match="lookup and pick both given"):
        next(steps)


@pytest.mark.parametrize("kwargs", [{"branches": 3}, {"branches": 0, "lookup": True}])
def test_replay_branches_ride_on_lookup(kwargs: dict) -> None:
    """Verify branches replay the engine's, which start from its lookup rule's block: more
    than one without lookup, or fewer than one, is refused rather than scored as one."""
    steps = replay_steps(None, None, [], 16, 2048, **kwargs)
    with pytest.raises(ValueError, match="expected 1, or more with lookup"):
        next(steps)
