"""The drafter's context writes from CUDA graphs inside SGLang on a GPU
(TURNSPEC_SGLANG_APPEND_GRAPHS=1, engine/sglang_plugin/append_graphs.py; skipped without sglang,
CUDA and the plugin's entry point): the same greedy turns through the plugin's trees with
SGLang's eager write and with the graphs' replays answer token for token alike and take the
same number of verify steps. A graph that wrote the context wrong (or not at all) would change
the drafts, and with them the steps (the answers stay the target's either way: verification is
lossless, so the steps are what shows it). On the device: TURNSPEC_SGLANG_DRAFTER=/tmp/sgcarry/drafter."""

from __future__ import annotations

import os
from pathlib import Path

from tests.engine.test_sglang_trees_cuda import (
    ASKS,
    ENGINE,
    JSON_ASKS,
    JSON_PARAMS,
    PARAMS,
    counters,
    prompts,
    pytestmark,  # noqa: F401 (the same skip)
)
from turnspec.engine.drafter import DEFAULT_DRAFTER_DIR


def run(kw: dict, jobs: list) -> tuple[list, int, dict]:
    """Every answer, the verify steps they took, and the plugin's counters."""
    import sglang

    eng = sglang.Engine(**kw, speculative_algorithm="DFLASH", speculative_draft_model_path=(
        os.environ.get("TURNSPEC_SGLANG_DRAFTER", str(DEFAULT_DRAFTER_DIR))))
    try:
        got, steps = [], 0
        for ids, params in jobs:
            for o in eng.generate(input_ids=ids, sampling_params=params):
                got.append(o["output_ids"])
                steps += int(o["meta_info"].get("spec_verify_ct", 0))
        return got, steps, counters(eng)
    finally:
        eng.shutdown()


def test_graph_replayed_context_writes_draft_as_sglangs_own(smollm2_dir: Path,
                                                             smollm2_tokenizer) -> None:
    from turnspec.engine.sglang_plugin.arm import arm
    from turnspec.engine.sglang_plugin.config import PluginConfig

    jobs = [(prompts(smollm2_tokenizer, ASKS), PARAMS),
            (prompts(smollm2_tokenizer, ASKS[:1]), PARAMS),  # one row; the six above pad as they end
            (prompts(smollm2_tokenizer, JSON_ASKS), JSON_PARAMS)]
    kw = {**ENGINE, "model_path": str(smollm2_dir), "grammar_backend": "xgrammar"}
    arm(PluginConfig(mode="trees"))
    want, want_steps, eager = run(kw, jobs)
    arm(PluginConfig(mode="trees", append_graphs=True))
    got, steps, graphs = run(kw, jobs)
    assert eager.get("append_replays", 0) == 0 and graphs.get("append_replays", 0) > 0, graphs
    assert steps > 0 and abs(steps - want_steps) <= max(2, want_steps // 100), (steps, want_steps)
    same = sum(g == w for g, w in zip(got, want, strict=True))
    assert same >= len(want) - 1, (same, len(want))
