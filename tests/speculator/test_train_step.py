"""`train_step` applies the LM head only to the slots that carry loss; its loss, gradients and
metrics must equal the dense computation over every [b, N, B-1] slot (the form it replaced)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from tests.speculator.tiny import TINY_LAYER_IDS, TINY_MASK
from turnspec.engine.drafter.config import DFlashConfig
from turnspec.engine.drafter.model import DFlashDrafter
from turnspec.speculator.blocks import (
    accepted_prefix,
    block_inputs,
    block_labels,
    decay_weights,
    sample_anchors,
)
from turnspec.speculator.data import PackedSplit, read_samples
from turnspec.speculator.target import FrozenTarget, read_target_config
from turnspec.speculator.train_step import StepMetrics, StepSpec, train_step

BLOCK = 8


def _dense_loss(drafter, target, split, batch, spec, decay, gen):
    """The LM head over every slot, masked afterwards (the pre-gather train_step)."""
    ids = split.ids[batch.rows, :batch.width]
    lmask = split.loss_mask[batch.rows, :batch.width]
    anchors, valid = sample_anchors(lmask, spec.anchors, gen)
    blocks = block_inputs(ids, anchors, spec.block_size, spec.mask_token_id)
    labels, ok = block_labels(ids, lmask, anchors, valid, spec.block_size)
    labels, ok = labels[..., 1:], ok[..., 1:]
    h = drafter.forward_train(target.features(ids), target.embed(blocks), anchors)
    logits = target.logits(h[:, :, 1:])
    ce = F.cross_entropy(logits.flatten(0, 2), labels.flatten(), reduction="none")
    w = decay[1:] * ok
    loss = (ce.view_as(labels) * w).sum() / w.sum().clamp(min=1e-6)
    drafts = logits.argmax(-1)
    tau = 1 + (accepted_prefix(drafts, labels, ok) * valid).sum() / valid.sum()
    return loss, tau, ((drafts == labels) & ok).sum((0, 1)), ok


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device"))])
def test_gathered_head_equals_the_dense_loss(tiny_data: Path, tiny_target_dir: Path,
                                             device: str):
    target = FrozenTarget.from_model_dir(tiny_target_dir, TINY_LAYER_IDS, device)
    cfg = DFlashConfig.for_target(read_target_config(tiny_target_dir), num_layers=1,
                                  block_size=BLOCK, mask_token_id=TINY_MASK, k=2)
    torch.manual_seed(0)
    drafter = DFlashDrafter(cfg).to(device)
    split = PackedSplit.build(read_samples(tiny_data), 64, device)
    # 48 anchors > the 31 candidates of a 32-token answer: invalid anchors, and blocks that
    # run past the end, so many slots carry no loss.
    spec = StepSpec(anchors=48, block_size=BLOCK, mask_token_id=TINY_MASK, soft_weight=0.0,
                    soft_topk=8, amp=False)
    decay = decay_weights(BLOCK, 4.0)
    batch = next(split.batches(8, torch.Generator().manual_seed(1)))
    decay = decay.to(device)
    acc = StepMetrics(BLOCK, torch.device(device))
    opt = torch.optim.AdamW(drafter.parameters(), lr=3e-3)
    for other in list(split.batches(8, torch.Generator()))[:15]:  # some hits: metrics that mean
        opt.zero_grad()                                              # something
        loss = train_step(drafter, target, split, other, spec, decay, torch.Generator(device), acc)
        loss.backward()
        opt.step()
    acc.read_and_reset()
    drafter.zero_grad()

    loss = train_step(drafter, target, split, batch, spec, decay,
                      torch.Generator(device).manual_seed(2), acc)
    loss.backward()
    grads = [p.grad.clone() for p in drafter.parameters()]
    drafter.zero_grad()
    ref, tau, hits, ok = _dense_loss(drafter, target, split, batch, spec, decay,
                                     torch.Generator(device).manual_seed(2))
    ref.backward()

    assert 0 < ok.float().mean() < 0.9                 # the case under test: skipped slots
    assert 0 < hits.sum() < ok.sum()
    torch.testing.assert_close(loss, ref, rtol=1e-5, atol=1e-6)
    for g, p in zip(grads, drafter.parameters(), strict=True):
        torch.testing.assert_close(g, p.grad, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(acc.hits, hits.double())
    assert acc.read_and_reset()["tau_block"] == round(tau.item(), 3)


def test_padding_columns_change_nothing(tiny_data: Path, tiny_target_dir: Path):
    """Batches round their width up (TrainConfig.width_multiple: few shapes for CUDA's
    per-shape attention plans); the extra columns come after every anchor's context, so the
    loss for the same anchors is the same as at the batch's own width."""
    target = FrozenTarget.from_model_dir(tiny_target_dir, TINY_LAYER_IDS, "cpu")
    cfg = DFlashConfig.for_target(read_target_config(tiny_target_dir), num_layers=1,
                                  block_size=BLOCK, mask_token_id=TINY_MASK, k=2)
    torch.manual_seed(0)
    drafter = DFlashDrafter(cfg)
    split = PackedSplit.build(read_samples(tiny_data), 64, "cpu")
    batch = min(split.batches(4, torch.Generator().manual_seed(0)), key=lambda b: b.width)
    full = split.ids.shape[1]
    assert batch.width < full
    anchors, valid = sample_anchors(split.loss_mask[batch.rows, :batch.width], 16,
                                    torch.Generator().manual_seed(3))

    def loss_at(width: int) -> torch.Tensor:
        ids = split.ids[batch.rows, :width]
        lmask = split.loss_mask[batch.rows, :width]
        blocks = block_inputs(ids, anchors, BLOCK, TINY_MASK)
        labels, ok = block_labels(ids, lmask, anchors, valid, BLOCK)
        h = drafter.forward_train(target.features(ids), target.embed(blocks), anchors)
        ce = F.cross_entropy(target.logits(h[:, :, 1:]).flatten(0, 2), labels[..., 1:].flatten(),
                             reduction="none").view_as(labels[..., 1:])
        return (ce * ok[..., 1:]).sum() / ok[..., 1:].sum()

    torch.testing.assert_close(loss_at(full), loss_at(batch.width))
