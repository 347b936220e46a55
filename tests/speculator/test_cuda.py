"""CUDA paths (skipped without a GPU): run these first on the H200, in seconds, before the
real training run: `pytest -q tests/speculator/test_cuda.py`."""

from __future__ import annotations

import pytest
import torch

from tests.engine.drafter.test_model import CFG, _block, _drafter, _inputs
from tests.speculator.test_train import _cfg
from turnspec.engine.drafter.folder import load_drafter
from turnspec.speculator.train import train

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def test_cuda_attention_matches_cpu():
    d = _drafter(CFG)                                                  # float64, CPU
    taps, embeds, anchors = _inputs()
    ref = d.forward_train(taps, embeds, anchors)
    dc = d.float().cuda()
    out = dc.forward_train(taps.float().cuda(), embeds.float().cuda(), anchors.cuda())
    torch.testing.assert_close(out.cpu().double(), ref, rtol=1e-4, atol=1e-4)
    blk = _block(dc, taps.float().cuda(), embeds.float().cuda(), anchors.cuda(), 1, 2, pad=3)
    torch.testing.assert_close(blk, out[1, 2], rtol=1e-5, atol=1e-5)


def test_cuda_training_bf16_autocast(tiny_data, tiny_target_dir, tmp_path):
    m = train(_cfg(tiny_data, tiny_target_dir, tmp_path, device="cuda", eval_every=60))
    losses = [h["loss"] for h in m["history"] if "loss" in h]
    assert losses[-1] < losses[0] - 0.5, losses
    assert m["tau"]["tools-heldout"] > 1.3 and m["tau"]["generic-heldout"] > 1.3, m["tau"]
    served = load_drafter(tmp_path / "drafter", device="cuda", dtype=torch.bfloat16)
    assert served.fc.weight.is_cuda and served.fc.weight.dtype == torch.bfloat16


def test_cuda_soft_label_training(tiny_data, tiny_target_dir, tmp_path):
    m = train(_cfg(tiny_data, tiny_target_dir, tmp_path, device="cuda", soft_weight=0.5,
                   soft_topk=4, max_steps=80))
    losses = [h["loss"] for h in m["history"] if "loss" in h]
    assert losses[-1] < losses[0] - 0.5, losses
    assert m["tau"]["tools-heldout"] > 1.3, m["tau"]


def test_cuda_training_reads_with_worker_processes(tiny_data, tiny_target_dir, tmp_path):
    # the target is on the GPU before the data is read: the workers are spawned, not forked,
    # from a process that holds a CUDA context (the H200 runs read with ~12 of them)
    m = train(_cfg(tiny_data, tiny_target_dir, tmp_path, device="cuda", load_workers=2,
                   max_steps=20))
    one = train(_cfg(tiny_data, tiny_target_dir, tmp_path / "one", device="cuda",
                     load_workers=1, max_steps=20))
    assert (m["train_sequences"], m["train_tokens"]) == (one["train_sequences"],
                                                        one["train_tokens"])
    assert "read by 2 processes" in (tmp_path / "train.log").read_text()
