"""One drafter training step (docs/drafter-training.md) and its on-device metrics.

A batch of whole sequences -> frozen target features (and, with soft labels, the target's
top-k distribution over each response) -> random anchors per sequence -> all blocks in one
drafter pass with the block mask -> decayed CE on slots 1..B-1 against same-position labels.
One host sync a step (which slots carry loss), and `StepPhases` (the one step per log point
that is timed phase by phase).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from turnspec.engine.drafter.model import DFlashDrafter
from turnspec.speculator.blocks import accepted_prefix, block_inputs, block_labels, sample_anchors
from turnspec.speculator.data import Batch, PackedSplit
from turnspec.speculator.soft_labels import (
    mixed_cross_entropy,
    response_start,
    slot_targets,
    window_topk,
)
from turnspec.speculator.target import FrozenTarget


@dataclass(slots=True, frozen=True)
class StepSpec:
    """What a step needs of the run's config (TrainConfig and DFlashConfig, validated there)."""
    anchors: int
    block_size: int
    mask_token_id: int
    soft_weight: float
    soft_topk: int
    amp: bool


class StepPhases:
    """Wall milliseconds per phase of one training step. Each boundary synchronizes the device
    (CUDA runs ahead of the host), so only the step before a log point is timed this way."""

    def __init__(self, device: torch.device) -> None:
        self.device, self.ms, self.t = device, {}, 0.0

    def _now(self) -> float:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.perf_counter()

    def start(self) -> None:
        self.t = self._now()

    def mark(self, phase: str) -> None:
        """Close `phase`: the time since start() or the previous mark."""
        now = self._now()
        self.ms[phase] = round((now - self.t) * 1e3, 2)
        self.t = now


class StepMetrics:
    """Device-side running sums between log points (no per-step host reads)."""

    def __init__(self, block_size: int, device: torch.device) -> None:
        self.z = lambda *s: torch.zeros(*s, device=device, dtype=torch.float64)
        self.loss, self.steps = self.z(()), 0
        self.accepted, self.blocks = self.z(()), self.z(())
        self.hits, self.slots = self.z(block_size - 1), self.z(block_size - 1)

    def read_and_reset(self) -> dict:
        hits = (self.hits / self.slots.clamp(min=1)).tolist()
        out = {"loss": round(self.loss.item() / max(1, self.steps), 4),
               "tau_block": round(1.0 + self.accepted.item() / max(1.0, self.blocks.item()), 3),
               "acc_slot1": round(hits[0], 3), "acc_slot_last": round(hits[-1], 3)}
        self.__init__(len(hits) + 1, self.loss.device)
        return out


def train_step(drafter: DFlashDrafter, target: FrozenTarget, split: PackedSplit, batch: Batch,
               spec: StepSpec, decay: torch.Tensor, gen: torch.Generator, acc: StepMetrics,
               phases: StepPhases | None = None) -> torch.Tensor:
    """One batch -> weighted CE loss (graph attached). Metrics go to `acc` on the device."""
    if phases is not None:
        phases.start()
    ids = split.ids[batch.rows, :batch.width]                             # [b, S]
    lmask = split.loss_mask[batch.rows, :batch.width]                     # [b, S] bool
    anchors, valid = sample_anchors(lmask, spec.anchors, gen)              # [b, N]
    blocks = block_inputs(ids, anchors, spec.block_size, spec.mask_token_id)
    labels, ok = block_labels(ids, lmask, anchors, valid, spec.block_size)  # [b, N, B]
    labels, ok = labels[..., 1:], ok[..., 1:]                             # slots 1..B-1
    if phases is not None:
        phases.mark("inputs")
    soft = None
    with torch.autocast(ids.device.type, dtype=torch.bfloat16, enabled=spec.amp):
        if spec.soft_weight > 0:
            taps, final = target.features_and_final(ids)                  # + [b, S, H]
            start = response_start(lmask)                                 # [b]
            top = window_topk(final, start, batch.response_span, spec.soft_topk, target.logits)
            soft = slot_targets(*top, start, anchors, spec.block_size)    # 2x [b, N, B-1, k]
        else:
            taps = target.features(ids)                                   # [b, S, K*H]
        if phases is not None:
            phases.mark("target")
        h = drafter.forward_train(taps, target.embed(blocks), anchors)    # [b, N, B, H]
        # The LM head only where a slot carries loss: on typical datagen lengths ~40% of the
        # [b, N, B-1] slots do not (anchors past a short response, slots past its end), and
        # the head ([..., 576] x [576, 49152]) is most of a step's FLOPs. One host sync.
        sel = ok.nonzero(as_tuple=True)                                   # M slots
        logits = target.logits(h[:, :, 1:][sel])                          # [M, V]
    if soft is None:
        ce = F.cross_entropy(logits.float(), labels[sel], reduction="none")
    else:
        ce = mixed_cross_entropy(logits, labels[sel], soft[0][sel], soft[1][sel],
                                 spec.soft_weight)
    w = decay[1:][sel[2]]
    loss = (ce * w).sum() / w.sum().clamp(min=1e-6)
    with torch.no_grad():
        drafts = torch.full_like(labels, -1)                              # [b, N, B-1]
        drafts[sel] = logits.argmax(-1)
        hit = (drafts == labels) & ok
        acc.loss += loss.detach()
        acc.steps += 1
        acc.accepted += (accepted_prefix(drafts, labels, ok) * valid).sum()
        acc.blocks += valid.sum()
        acc.hits += hit.sum((0, 1))
        acc.slots += ok.sum((0, 1))
    if phases is not None:
        phases.mark("drafter")
    return loss
