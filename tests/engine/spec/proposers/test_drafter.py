"""The drafter's proposal read from its logits: the greedy block within each row's width, the
confidence cut, the expected accepted drafts and the next guesses, in one host copy."""

from __future__ import annotations

import math

import pytest
import torch

from turnspec.engine.spec.proposers.drafter import next_guesses, propose_drafts


def logits_for(rows: list[list[list[float]]]) -> torch.Tensor:
    """Per row and position, probabilities over a small vocabulary -> logits [b, w, V]."""
    return torch.tensor(rows, dtype=torch.float32).log()


ROWS = [
    [[0.9, 0.06, 0.04], [0.1, 0.6, 0.3], [0.25, 0.15, 0.6]],   # drafts 0, 1, 2
    [[0.15, 0.05, 0.8], [0.5, 0.4, 0.1], [0.35, 0.25, 0.4]],   # drafts 2, 0, 2
]


def test_the_block_is_the_argmax_within_each_rows_width() -> None:
    got = propose_drafts(logits_for(ROWS), [3, 1])
    assert got.argmax == [[0, 1, 2], [2, 0, 2]]
    assert got.drafts == [[0, 1, 2], [2, -1, -1]]
    assert got.expected == [0.0, 0.0] and got.probs == [] and got.guesses == []
    assert got.verified(0) == 3 and got.verified(1) == 1
    assert propose_drafts(logits_for(ROWS), [0, 0]).drafts == [[-1] * 3, [-1] * 3]


def test_probabilities_expected_drafts_and_the_confidence_cut() -> None:
    got = propose_drafts(logits_for(ROWS), [3, 2], probabilities=True)
    assert got.probs[0] == pytest.approx([0.9, 0.6, 0.6], rel=1e-5)
    # expected accepted drafts: the cumulative probabilities summed within the width
    assert got.expected[0] == pytest.approx(0.9 + 0.54 + 0.324, rel=1e-5)
    assert got.expected[1] == pytest.approx(0.8 + 0.4, rel=1e-5)
    cut = propose_drafts(logits_for(ROWS), [3, 2], min_confidence=0.5)
    assert cut.drafts == [[0, 1, -1], [2, -1, -1]]   # 0.324 < 0.5; 0.4 < 0.5
    assert cut.argmax[0] == [0, 1, 2]                 # the block before the cut stays readable


def test_next_guesses_most_likely_first_with_their_probabilities() -> None:
    got = propose_drafts(logits_for(ROWS), [3, 3], guesses=2)
    assert got.guesses[0] == [[1, 2], [2, 0], [0, 1]]
    assert got.guess_probs[0][1] == pytest.approx([0.3, 0.1], rel=1e-5)
    assert got.probs[1] == pytest.approx([0.8, 0.5, 0.4], rel=1e-5)  # guesses imply probabilities
    p, g, q = next_guesses(logits_for(ROWS), 5)   # a vocabulary of 3: every other token
    assert g.shape == (2, 3, 2) and math.isclose(float(p[0, 0] + q[0, 0].sum()), 1.0, rel_tol=1e-5)


def test_widths_are_checked() -> None:
    with pytest.raises(ValueError, match="expected one width 0..W per row"):
        propose_drafts(logits_for(ROWS), [4, 1])
    with pytest.raises(ValueError, match="expected one width 0..W per row"):
        propose_drafts(logits_for(ROWS), [1])
