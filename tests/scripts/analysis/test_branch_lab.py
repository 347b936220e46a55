"""scripts/analysis/branch_lab.py: the drafter's outputs recorded at every anchor, and the host
walk of any branch plan over them, which must commit exactly the steps the per-step replay
(lookup_oracle.py, the engine's pick) commits."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

from turnspec.speculator.data import read_samples

ROOT = Path(__file__).resolve().parents[3]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / f"scripts/analysis/{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


lab, oracle = _load("branch_lab"), _load("lookup_oracle")


def test_accepted_counts_the_leading_matches_only() -> None:
    assert lab.accepted([1, 2, 3], [1, 2, 4]) == 2
    assert lab.accepted([-1, 2], [1, 2]) == 0
    assert lab.accepted([1, 2, 3], [1, 2]) == 2  # the turn ends after two tokens


def test_walk_matches_the_per_step_replay(smollm2_dir, tmp_path) -> None:
    """On real held-out tool turns (SmolLM2 and the default drafter): the walk over recorded
    anchors takes the same number of steps per turn as lookup_oracle's replay, for the rule
    and for 3 branches under both plans; a dump round-trips through its file."""
    from turnspec.engine.drafter.folder import load_drafter
    from turnspec.speculator.target import FrozenTarget

    held = [s for s in read_samples(ROOT / "models/assets/smollm2-dflash/heldout.jsonl")
            if s.split == "heldout"][:1]
    drafter = load_drafter("default", dtype=torch.float32)
    target = FrozenTarget.from_model_dir(str(smollm2_dir), drafter.config.target_layer_ids,
                                         torch.device("cpu"), torch.float32)
    turns = lab.record_turns(drafter, target, held, 16, guesses=2)
    assert [t.end - t.start for t in turns] == [len(t.drafts) for t in turns]
    out = oracle.oracle_replay(drafter, target, held, 16, branches=(3,),
                               plans=("first", "planned"))
    for mode, n, plan in (("rule", 1, "first"), ("3 branches", 3, "first"),
                          ("3 branches planned", 3, "planned")):
        tokens, steps = lab.simulate(turns, n, plan)
        assert tokens == out["tokens"][mode], mode
        assert steps == out["steps"][mode], mode
    # with a datastore branch: the walk against the product's replay (`speculator eval
    # --datastore`), the store the target's answers to other held-out turns
    from turnspec.engine.spec.proposers.datastore import TokenDatastore
    from turnspec.speculator.tau import evaluate_tau_runs

    others = [s for s in read_samples(ROOT / "models/assets/smollm2-dflash/heldout.jsonl")
              if s.split == "heldout"][1:]
    store = TokenDatastore([t for t, m in zip(s.input_ids, s.loss_mask, strict=True) if m]
                           for s in others)
    assert any(len(store.draft(t.ids[: a + 1], 15)) >= 2 for t in turns
               for a in range(t.start, t.end))  # the store has blocks to offer
    res = evaluate_tau_runs(drafter, target, held, [16], [True], branches=3, plan="planned",
                            datastore=store)[(16, True)]
    tokens, steps = lab.simulate(turns, 3, "planned", store)
    assert list(res.rows) == list(zip(tokens, steps, strict=True))
    # one tree a step: with room for every block it commits what the rows commit; a chain's 16
    # nodes with no branch commit the rule's steps
    assert lab.simulate(turns, 3, "planned", None, 64) == lab.simulate(turns, 3, "planned")
    assert lab.simulate(turns, 1, "first", None, 16) == lab.simulate(turns, 1, "first")
    path = tmp_path / "dump.pt"
    torch.save({"turns": [lab.asdict(t) for t in turns], "source": "heldout"}, path)
    back, meta = lab.load_turns(path)
    assert meta == {"source": "heldout"}
    assert lab.simulate(back, 3, "planned") == lab.simulate(turns, 3, "planned")
