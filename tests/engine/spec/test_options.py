"""SpecOptions: validated once, and the one rule for a step's budget of extra verify rows."""

from __future__ import annotations

import pytest

from turnspec.engine.spec.options import SpecOptions


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
