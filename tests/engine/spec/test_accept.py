"""Accept: a row commits the block accepted furthest, its own on a tie."""

from __future__ import annotations

import pytest

from turnspec.engine.spec.accept import furthest


def test_the_furthest_accepted_block_wins_and_ties_keep_the_earlier() -> None:
    # rows 0..2 own blocks 0..2; extra blocks 3 (row 0), 4 (row 2), 5 (row 0), 6 (row 2)
    owner = [0, 1, 2, 0, 2, 0, 2]
    assert furthest(owner, [1, 4, 2, 3, 2, 5, 3], 3) == [5, 1, 6]
    assert furthest(owner, [3, 0, 2, 3, 2, 3, 1], 3) == [0, 1, 2]   # ties: the row's own block
    assert furthest([0, 1], [0, 0], 2) == [0, 1]


def test_blocks_must_line_up_with_rows() -> None:
    with pytest.raises(ValueError, match="rows' own blocks first"):
        furthest([1, 0], [0, 0], 2)
    with pytest.raises(ValueError, match="one of each per block"):
        furthest([0, 1, 0], [0, 0], 2)
