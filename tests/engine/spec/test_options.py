"""SpecOptions: validated once, and the one rule for a step's budget of extra verify rows."""

from __future__ import annotations

import pytest

from turnspec.engine.spec.options import SpecOptions
from turnspec.engine.spec.width import Curve, WidthRule


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"min_confidence": 1.0}, "min_confidence: expected 0 <= value < 1"),
    ({"lookup": 1}, "lookup: expected True or False"),
    ({"lookup_below": -1.0}, "lookup_below: expected >= 0"),
    ({"branches": 0}, "branches: expected an integer 1..16"),
    ({"branches": 17}, "branches: expected an integer 1..16"),
    ({"branches": True}, "branches: expected an integer 1..16"),
    ({"plan": "greedy"}, "plan: expected one of"),
    ({"max_extra_rows": 0}, "max_extra_rows: expected a positive integer or None"),
])
def test_bad_options_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SpecOptions(**kwargs)


def test_the_budget_is_every_branch_of_every_greedy_row_up_to_the_cap() -> None:
    assert SpecOptions(branches=3).extra_row_budget(4) == 8
    assert SpecOptions(branches=16, max_extra_rows=32).extra_row_budget(1) == 15   # one stream
    assert SpecOptions(branches=16, max_extra_rows=32).extra_row_budget(32) == 32  # a full batch
    assert SpecOptions().extra_row_budget(8) == 0                                   # one branch


def test_a_width_rule_narrows_the_budget_as_the_batch_grows() -> None:
    # a pass costs the same up to 128 tokens, then grows with every token (a GPU filling up)
    rule = WidthRule(tau=Curve.of([(1, 3.7), (8, 6.3), (16, 6.5)]),
                     cost=Curve.of([(16, 1.0), (128, 1.0), (4096, 32.0)]))
    opts = SpecOptions(branches=16, width=rule)
    assert opts.extra_row_budget(1, block=16) == 7       # 8 blocks of 16 still cost one pass
    assert opts.extra_row_budget(32, block=16) == 0      # a full batch verifies one block
    assert opts.most_extra_rows(32) == 15 * 32           # scratch is sized for the widest step
    assert SpecOptions(branches=16, width=rule, max_extra_rows=4).extra_row_budget(1, 0, 16) == 4


def test_a_width_that_is_not_a_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="width: expected a WidthRule or None"):
        SpecOptions(width=32)
