"""The early first token inside SGLang on a GPU (TURNSPEC_SGLANG_EARLY_FIRST_TOKEN,
engine/sglang_plugin/first_token.py; skipped without sglang, CUDA and the plugin's entry point):
with it, SGLang's overlap scheduler processes a prefill's result before it launches the decode
step after it, and the same greedy turns through the plugin's trees answer token for token as
they do without it, but for one bf16 near-tie where a batch forms otherwise (the order of the
host's work changes, not what the GPU computes). On the device:
TURNSPEC_SGLANG_DRAFTER=/tmp/sgcarry/drafter."""

from __future__ import annotations

from pathlib import Path

from tests.engine.test_sglang_append_graphs_cuda import run
from tests.engine.test_sglang_trees_cuda import (
    ASKS,
    ENGINE,
    JSON_ASKS,
    JSON_PARAMS,
    PARAMS,
    prompts,
    pytestmark,  # noqa: F401 (the same skip)
)


def test_an_early_first_token_answers_as_sglangs_overlap(smollm2_dir: Path,
                                                        smollm2_tokenizer) -> None:
    from turnspec.engine.sglang_plugin.arm import arm
    from turnspec.engine.sglang_plugin.config import PluginConfig

    jobs = [(prompts(smollm2_tokenizer, ASKS), PARAMS),
            (prompts(smollm2_tokenizer, ASKS[:1]), PARAMS),
            (prompts(smollm2_tokenizer, JSON_ASKS), JSON_PARAMS)]
    kw = {**ENGINE, "model_path": str(smollm2_dir), "grammar_backend": "xgrammar"}
    arm(PluginConfig(mode="trees"))
    want, _, overlapped = run(kw, jobs)
    arm(PluginConfig(mode="trees", early_rows=8))
    got, _, early = run(kw, jobs)
    assert overlapped.get("early_first_tokens", 0) == 0 and early.get("early_first_tokens", 0) > 0
    same = sum(g == w for g, w in zip(got, want, strict=True))
    assert same >= len(want) - 1, (same, len(want))  # one bf16 near-tie, if the batches differ
