"""Soft labels line up with the hard ones: on data the tiny target answered greedily, the top
token of every valid slot's soft label is that slot's same-position label (an off-by-one in the
window or the slot offset would break this on almost every slot), and the mixed loss reduces to
plain CE at w = 0 and to CE on a one-hot soft label at w = 1."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tests.speculator.tiny import TINY_LAYER_IDS
from turnspec.speculator.blocks import block_labels, sample_anchors
from turnspec.speculator.data import PackedSplit, read_samples
from turnspec.speculator.soft_labels import (
    mixed_cross_entropy,
    response_start,
    slot_targets,
    window_topk,
)
from turnspec.speculator.target import FrozenTarget

BLOCK = 6


@pytest.fixture(scope="module")
def packed(tiny_data):
    return PackedSplit.build(read_samples(tiny_data)[:24], max_len=64, device="cpu")


def test_top_soft_token_is_the_same_position_label(packed, tiny_target_dir):
    target = FrozenTarget.from_model_dir(tiny_target_dir, TINY_LAYER_IDS)
    ids, lmask = packed.ids, packed.loss_mask
    taps, final = target.features_and_final(ids)
    assert torch.equal(taps, target.features(ids))                # same taps, full forward
    start = response_start(lmask)
    assert all(int(start[r]) == lmask[r].tolist().index(True) for r in range(len(packed)))
    span = max(packed.spans)
    probs, top_ids = window_topk(final, start, span, 4, target.logits)
    assert probs.shape == (len(packed), span, 4)
    torch.testing.assert_close(probs.sum(-1), torch.ones(len(packed), span))
    assert bool((probs[..., :-1] >= probs[..., 1:]).all())        # best first
    anchors, valid = sample_anchors(lmask, 8, torch.Generator().manual_seed(0))
    labels, ok = block_labels(ids, lmask, anchors, valid, BLOCK)
    p, t = slot_targets(probs, top_ids, start, anchors, BLOCK)
    assert p.shape == t.shape == (len(packed), 8, BLOCK - 1, 4)
    ok = ok[..., 1:]
    assert int(ok.sum()) > 500
    assert torch.equal(t[..., 0][ok], labels[..., 1:][ok])


def test_mixed_loss_limits():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(3, 5, 11, generator=g)
    labels = torch.randint(0, 11, (3, 5), generator=g)
    soft_ids = torch.randint(0, 11, (3, 5, 4), generator=g)
    soft_p = torch.rand(3, 5, 4, generator=g).softmax(-1)
    ce = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="none").view(3, 5)
    torch.testing.assert_close(mixed_cross_entropy(logits, labels, soft_p, soft_ids, 0.0), ce)
    one_hot = torch.zeros(3, 5, 4)
    one_hot[..., 0] = 1.0
    soft_ids[..., 0] = labels
    torch.testing.assert_close(mixed_cross_entropy(logits, labels, one_hot, soft_ids, 1.0), ce)
    with pytest.raises(ValueError, match="soft_weight"):
        mixed_cross_entropy(logits, labels, soft_p, soft_ids, 1.5)
