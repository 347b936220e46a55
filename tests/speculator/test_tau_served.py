"""The offline τ replay is the served τ: on real turns (SmolLM2 and the default drafter), the
replay of the engine's own answers commits, step for step, what the engine committed when it
served them, with prompt lookup and 16 planned verify branches (engine and replay both run the
speculation core's proposers and planner, engine/spec/)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
import torch

from turnspec.engine.local.config import LocalEngineConfig
from turnspec.engine.local.core import EngineCore
from turnspec.engine.protocol import GenerateRequest, SamplingParams
from turnspec.speculator.data import Sample, read_samples
from turnspec.speculator.tau import replay_context, replay_order, replay_steps
from turnspec.speculator.train_io import eval_splits

ROOT = Path(__file__).resolve().parents[2]
INDEPENDENT = ROOT / "docs/gpu-runs/2026-12-04-copy-rule/evalset-samples.jsonl.gz"
MAX_NEW = 48


def served(core: EngineCore, prompts: list[list[int]]) -> list[tuple[list[int], list[int]]]:
    """Each prompt's greedy answer and the tokens each verify step committed."""
    for i, p in enumerate(prompts):
        core.add(GenerateRequest(f"r{i}", p, SamplingParams(max_tokens=MAX_NEW)))
    out = {f"r{i}": ([], []) for i in range(len(prompts))}
    while core.has_work():
        for d in core.step():
            out[d.request_id][0].extend(d.token_ids)
            if d.finished:
                assert d.error is None, d.error
                out[d.request_id][1].extend(d.spec.step_lengths if d.spec else [])
    return [out[f"r{i}"] for i in range(len(prompts))]


@pytest.mark.slow
def test_replay_commits_the_served_steps(smollm2_dir: Path, tmp_path: Path, monkeypatch) -> None:
    # the drafter in fp32 on any CPU (the replay's dtype), whole blocks, every branch, no cap
    monkeypatch.setattr("turnspec.engine.local.spec_build.cpu_has_native_bf16", lambda: False)
    cfg = LocalEngineConfig(model_dir=str(smollm2_dir), speculator="default",
                            spec_policy="always", spec_min_confidence=0.0, spec_lookup=True,
                            spec_branches=16, spec_branch_rows=None, cpu_gemm="torch")
    core = EngineCore(cfg)
    plain = tmp_path / "evalset.jsonl"
    plain.write_bytes(gzip.decompress(INDEPENDENT.read_bytes()))
    splits = eval_splits(read_samples(plain), 2)
    turns = splits["independent-generic"] + splits["independent-voice"][:1]
    prompts = [list(s.input_ids[: s.prompt_len]) for s in turns]
    answers = served(core, prompts)
    samples = [Sample(f"t{i}", "heldout", "independent-generic", tuple(p + a),
                      tuple([0] * len(p) + [1] * len(a)))
               for i, (p, (a, _)) in enumerate(zip(prompts, answers, strict=True))]
    order = replay_order(samples)
    drafter, target = _replay_models(smollm2_dir)
    context = replay_context(drafter, target, order, 2048, 16)
    replayed = [[] for _ in order]
    for step in replay_steps(drafter, target, order, 16, 2048, context, lookup=True,
                             branches=16, plan="planned"):
        for r, (n, live) in enumerate(zip(step.produced.tolist(), step.active.tolist(),
                                          strict=True)):
            if live:
                replayed[r].append(n)
    by_id = {s.id: steps for s, steps in zip(order, replayed, strict=True)}
    for i, (_, steps) in enumerate(answers):
        assert by_id[f"t{i}"] == steps, f"turn {i}"
    assert sum(map(len, by_id.values())) < sum(len(a) for a, _ in answers)  # drafts landed


def _replay_models(model_dir: Path):
    """The drafter and the target as `speculator eval` loads them on a CPU (fp32)."""
    from turnspec.engine.drafter.folder import load_drafter
    from turnspec.speculator.target import FrozenTarget

    drafter = load_drafter("default", dtype=torch.float32)
    return drafter, FrozenTarget.from_model_dir(str(model_dir), drafter.config.target_layer_ids,
                                                torch.device("cpu"), torch.float32)
