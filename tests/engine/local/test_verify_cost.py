"""`--spec-width measured`: the verify cost timed at start-up, the drafter's τ by branches read
beside it, and the width rule they make keeps greedy output the target's own."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from tests.engine.local.test_spec_step import run
from tests.engine.tiny import make_drafter, make_target, make_tokenizer
from turnspec.engine.local.config import LocalEngineConfig
from turnspec.engine.local.core import EngineCore
from turnspec.engine.local.verify_cost import TAU_FILE, read_tau_curve
from turnspec.engine.protocol import SamplingParams
from turnspec.engine.spec.width import Curve, WidthRule


def tau_folder(tmp_path: Path, doc: dict) -> Path:
    folder = tmp_path / "drafter"
    folder.mkdir(exist_ok=True)
    (folder / TAU_FILE).write_text(json.dumps(doc))
    return folder


def measured_core(target: Path, vocab: int, drafter, folder: Path, branches: int) -> EngineCore:
    cfg = LocalEngineConfig(model_dir=str(target), dtype="float64", block_size=4,
                            kv_memory_gb=0.05, max_batch=8, spec_policy="always",
                            spec_branches=branches, spec_branch_plan="planned",
                            speculator=str(folder), spec_width="measured")
    return EngineCore(cfg, tokenizer=make_tokenizer(vocab), drafter=drafter)


def test_a_measured_width_keeps_greedy_identical_at_every_width(tmp_path: Path) -> None:
    vocab, seed = 12, 1
    target = make_target(tmp_path, vocab, seed)
    g = torch.Generator().manual_seed(seed)
    motif = torch.randint(2, vocab, (5,), generator=g).tolist()
    prompts = [motif * 3, torch.randint(2, vocab, (11,), generator=g).tolist(), motif * 2 + [3]]
    sampling = SamplingParams(max_tokens=24, ignore_eos=True)
    plain, _ = run(EngineCore(LocalEngineConfig(model_dir=str(target), dtype="float64",
                                                block_size=4, kv_memory_gb=0.05, max_batch=8),
                              tokenizer=make_tokenizer(vocab)), prompts, sampling)
    folder = tau_folder(tmp_path, {"branches": [1, 4], "tau": [1.5, 3.0]})
    core = measured_core(target, vocab, make_drafter(target, 8, seed), folder, branches=4)
    rule = core.speculation.options.width
    assert isinstance(rule, WidthRule) and rule.tau.ys == (1.5, 3.0)
    # timed at every row count up to the widest step: 8 rows + 8 * 3 extra, blocks of 8 tokens
    assert rule.cost.xs == tuple(float(r * 8) for r in (1, 2, 4, 8, 16, 32))
    assert rule.fixed > 0  # the drafter's pass, timed beside the verify
    assert run(core, prompts, sampling)[0] == plain
    # the same engine under a rule that always pays (flat cost) and one that never does
    for cost in (Curve.of([(1, 1.0)]), Curve.of([(1, 1.0), (2, 2.0)])):
        core.speculation.options = replace(core.speculation.options, width=WidthRule(rule.tau, cost))
        assert run(core, prompts, sampling)[0] == plain


def test_measured_width_needs_branches_and_the_tau_file(tmp_path: Path) -> None:
    target = make_target(tmp_path, 12, 0)
    drafter = make_drafter(target, 8, 0)
    with pytest.raises(ValueError, match="expected a speculator and --spec-branches 2 or more"):
        measured_core(target, 12, drafter, tmp_path, branches=1)
    with pytest.raises(FileNotFoundError, match="needs the drafter's τ by verify branches"):
        measured_core(target, 12, drafter, tmp_path / "nowhere", branches=4)


@pytest.mark.parametrize("doc", [{"branches": [1, 2]}, {"branches": [1, 2], "tau": [2.0]},
                                 {"branches": [2, 1], "tau": [2.0, 0.0]}])
def test_a_bad_tau_file_says_what_it_expected(tmp_path: Path, doc: dict) -> None:
    with pytest.raises(ValueError, match="expected"):
        read_tau_curve(tau_folder(tmp_path, doc))


def test_spec_width_is_validated() -> None:
    with pytest.raises(ValueError, match=r"spec_width: expected one of \('fixed', 'measured'\)"):
        LocalEngineConfig(model_dir=".", spec_width="auto")
