"""scripts/analysis/lookup_oracle.py: the best per-step choice between the drafter's block and
the prompt-lookup continuation, where the engine's rule falls short of it, and what more verify
branches reach."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

from turnspec.speculator.data import read_samples

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("lookup_oracle", ROOT / "scripts/analysis/lookup_oracle.py")
oracle = importlib.util.module_from_spec(spec)
spec.loader.exec_module(oracle)


def _accepted_of(truth: torch.Tensor):
    def accepted_of(cand: torch.Tensor, rows: torch.Tensor | None = None) -> torch.Tensor:
        t = truth if rows is None else truth[rows]
        return (cand == t).long().cumprod(-1).sum(-1)
    return accepted_of


def test_pick_takes_the_lookup_the_rule_passed_over_and_counts_the_miss() -> None:
    """Row 0 repeats "1 2 3" and goes on as before (4 5 1 2): the lookup would land the whole
    block, but its source matches only 3 tokens and the drafter is sure of its own wrong block,
    so the rule keeps the drafter. Row 1 has no continuation: the drafter's block stands."""
    host = [[1, 2, 3, 4, 5, 1, 2, 3], [6, 7, 8, 9, 0, 6, 7, 8]]
    host[1][5:] = [5, 4, 3]                            # no earlier occurrence of its suffix
    drafts = torch.tensor([[9, 9, 9, 9], [2, 2, 2, 2]])
    logits = torch.full((2, 4, 10), -20.0)
    logits[0, :, 9] = 20.0                             # sure of 9 9 9 9 (expects ~4 accepted)
    logits[1, :, 2] = 20.0
    truth = torch.tensor([[4, 5, 1, 2], [2, 2, 7, 7]])
    anchor, active = torch.tensor([7, 7]), torch.tensor([True, True])
    pick = oracle.OraclePick(host)
    out = pick(drafts, logits, anchor, active, _accepted_of(truth))
    # row 1 has no continuation: its second branch is the drafter's block under its second
    # first token (all tokens tie at -20 but the 2: the lowest index, 0), which lands nothing
    assert out.tolist() == [[4, 5, 1, 2], [2, 2, 2, 2]]
    assert pick.steps == 2
    assert dict(pick.missed) == {("match 2-5", "rule took drafter"): 1}
    assert dict(pick.lost) == {("match 2-5", "rule took drafter"): 4}


def test_replay_scores_the_same_turns_three_ways(smollm2_dir) -> None:
    """On real held-out tool turns (SmolLM2 and the default drafter): every mode, each branch
    count under both branch plans, commits the same tokens; the oracle's steps are the ones it
    tallied (the first plan's); the table names every mode."""
    from turnspec.engine.drafter.folder import load_drafter
    from turnspec.speculator.target import FrozenTarget

    held = [s for s in read_samples(ROOT / "models/assets/smollm2-dflash/heldout.jsonl")
            if s.split == "heldout"][:3]
    drafter = load_drafter("default", dtype=torch.float32)
    target = FrozenTarget.from_model_dir(str(smollm2_dir), drafter.config.target_layer_ids,
                                         torch.device("cpu"), torch.float32)
    out = oracle.oracle_replay(drafter, target, held, 16, branches=(2, 4),
                               plans=("first", "planned"))
    modes = ["drafter", "rule", "2 branches", "2 branches planned", "4 branches",
             "4 branches planned"]
    assert out["modes"] == modes
    assert all(out["tokens"][m] == out["tokens"]["rule"] for m in modes)
    assert out["oracle_steps"] == sum(out["steps"]["2 branches"])
    assert all(m["steps"] <= m["drafts_lost"] for m in out["missed"])
    # more branches accept at least as far from any one anchor; on these turns that means
    # fewer steps in all (not a theorem: a longer jump can land on a worse anchor)
    assert sum(out["steps"]["4 branches"]) <= sum(out["steps"]["2 branches"]) \
        <= sum(out["steps"]["rule"])
    table, summary = oracle.report(out)
    assert set(summary) == set(modes) and summary["rule"]["gain_over_rule"] == 0
    assert all(mode in table for mode in modes)
