"""scripts/analysis/miss_rank.py: where the drafter's block first goes wrong and the rank of
the target's token there."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from turnspec.speculator.data import read_samples

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("miss_rank", ROOT / "scripts/analysis/miss_rank.py")
miss_rank = importlib.util.module_from_spec(spec)
spec.loader.exec_module(miss_rank)


def _accepted_of(truth: torch.Tensor, valid: torch.Tensor):
    return lambda cand: ((cand == truth) & valid).long().cumprod(-1).sum(-1)


def test_tally_ranks_the_first_mismatch_and_skips_full_and_ended_blocks() -> None:
    """Row 0 misses at position 1 where the answer's token is the drafter's 3rd guess; row 1's
    block is all accepted; row 2's answer ends before its first mismatch; row 3 is inactive."""
    ids = torch.tensor([[0, 5, 6, 7, 0, 0]] * 4)
    ids[1] = torch.tensor([0, 1, 2, 3, 0, 0])
    end = torch.tensor([3, 3, 1, 3])
    drafts = torch.tensor([[5, 2, 7], [1, 2, 3], [5, 9, 9], [1, 1, 1]])
    logits = torch.zeros(4, 3, 10)
    logits[0, 1, 2], logits[0, 1, 8], logits[0, 1, 6] = 3.0, 2.0, 1.0   # 6 ranks 3rd
    anchor = torch.zeros(4, dtype=torch.long)
    active = torch.tensor([True, True, True, False])
    pos = anchor[:, None] + torch.arange(1, 4)
    truth, valid = ids.gather(1, pos), pos <= end[:, None]
    tally = miss_rank.MissTally(ids, end)
    out = tally(drafts, logits, anchor, active, _accepted_of(truth, valid))
    assert out is drafts
    assert tally.steps == 3
    assert dict(tally.ranks) == {"3": 1} and dict(tally.positions) == {1: 1}


def test_rank_buckets() -> None:
    assert [miss_rank.rank_bucket(r) for r in (2, 4, 5, 10, 11)] == ["2", "4", "5-10", "5-10", ">10"]
    with pytest.raises(ValueError, match="expected 2 or more"):
        miss_rank.rank_bucket(1)


def test_replay_counts_every_step_on_real_turns(smollm2_dir) -> None:
    """SmolLM2 and the default drafter on two held-out tool turns: every mismatch is counted
    once by rank and once by position, never more than the steps."""
    from turnspec.engine.drafter.folder import load_drafter
    from turnspec.speculator.target import FrozenTarget

    held = [s for s in read_samples(ROOT / "models/assets/smollm2-dflash/heldout.jsonl")
            if s.split == "heldout"][:2]
    drafter = load_drafter("default", dtype=torch.float32)
    target = FrozenTarget.from_model_dir(str(smollm2_dir), drafter.config.target_layer_ids,
                                         torch.device("cpu"), torch.float32)
    out = miss_rank.tally(drafter, target, held, 16)
    assert out["turns"] == 2 and 0 < out["mismatches"] <= out["steps"]
    assert sum(out["rank"].values()) == sum(out["position"].values()) == out["mismatches"]
    assert all(0 <= int(p) < 15 for p in out["position"])
    assert "first mismatch at block position" in miss_rank.report(out)
