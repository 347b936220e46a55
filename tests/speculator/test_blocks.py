"""Training-block math. Pins the two SpecForge tau~1.3 bugs (#455/#473) at the label side:
block slot k is trained on x[anchor + k], the token at its own position (no shift)."""

from __future__ import annotations

import math

import torch

from turnspec.speculator.blocks import (
    accepted_prefix,
    anchor_candidates,
    block_inputs,
    block_labels,
    cosine_lr,
    decay_weights,
    sample_anchors,
)

IDS = torch.arange(100, 120)[None]                                  # [1, 20], x[i] = 100 + i
MASK = torch.tensor([[False] * 5 + [True] * 15])                     # response from position 5


def test_labels_are_same_position_not_shifted():
    anchors = torch.tensor([[5, 9, 17]])
    labels, ok = block_labels(IDS, MASK, anchors, torch.ones(1, 3, dtype=torch.bool), 4)
    assert labels[0, 0].tolist() == [105, 106, 107, 108]            # slot k -> x[anchor + k]
    assert labels[0, 1].tolist() == [109, 110, 111, 112]
    assert ok[0, 0].tolist() == [False, True, True, True]            # the anchor slot: no loss
    assert labels[0, 2, :3].tolist() == [117, 118, 119]
    assert ok[0, 2].tolist() == [False, True, True, False]           # past the end: no loss


def test_labels_respect_loss_mask_and_anchor_validity():
    mask = MASK.clone()
    mask[0, 7] = False                                               # a prompt token mid-way
    labels, ok = block_labels(IDS, mask, torch.tensor([[5, 9]]), torch.tensor([[True, False]]), 4)
    assert ok[0, 0].tolist() == [False, True, False, True]
    assert not ok[0, 1].any()


def test_block_inputs_anchor_then_masks():
    blocks = block_inputs(IDS, torch.tensor([[5, 12]]), 4, mask_token_id=7)
    assert blocks.tolist() == [[[105, 7, 7, 7], [112, 7, 7, 7]]]


def test_anchor_candidates_need_two_response_tokens():
    m = torch.tensor([[0, 1, 1, 0, 1, 1, 1]], dtype=torch.bool)
    assert anchor_candidates(m).long().tolist() == [[0, 1, 0, 0, 1, 1, 0]]


def test_sample_anchors_distinct_candidates_redrawn():
    g = torch.Generator().manual_seed(0)
    a1, v1 = sample_anchors(MASK, 6, g)
    a2, _ = sample_anchors(MASK, 6, g)
    assert v1.all() and len(set(a1[0].tolist())) == 6
    assert all(5 <= a <= 18 for a in a1[0].tolist()) and a1[0].tolist() == sorted(a1[0].tolist())
    assert not torch.equal(a1, a2)                                   # fresh anchors each draw
    few, valid = sample_anchors(MASK & (torch.arange(20) < 8), 6, g)  # candidates 5, 6 only
    assert valid.sum() == 2 and sorted(few[valid].tolist()) == [5, 6]


def test_decay_accept_and_schedule():
    w = decay_weights(16, 7.0)
    assert w[0] == 0 and w[1] == 1 and math.isclose(w[15].item(), math.exp(-2.0), rel_tol=1e-6)
    labels = torch.tensor([[1, 2, 3, 4]])
    ok = torch.ones(1, 4, dtype=torch.bool)
    assert accepted_prefix(torch.tensor([[1, 2, 9, 4]]), labels, ok).tolist() == [2]
    ok[0, 1] = False
    assert accepted_prefix(torch.tensor([[1, 2, 3, 4]]), labels, ok).tolist() == [1]
    assert cosine_lr(0, 100, 10, 1.0) == 0.1 and cosine_lr(9, 100, 10, 1.0) == 1.0
    assert math.isclose(cosine_lr(100, 100, 10, 1.0, 0.1), 0.1)
