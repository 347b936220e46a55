"""Verify trees inside SGLang on a GPU (TURNSPEC_SGLANG_SPEC=trees; skipped without sglang, CUDA
and the plugin's entry point): greedy turns through DFLASH with the plugin's trees answer as
SGLang without speculation does, and some accepted paths leave the drafter's chain; the same
under a JSON-schema grammar (SGLang's grammar walk follows the trees), where every answer also
fits the schema, with a learning datastore drafting from the first batch's answers; and the
plugin's own step work counts no host sync (TURNSPEC_SGLANG_SYNC_CHECK, state.sync_free). The
same holds with plain decode steps mixed in (TURNSPEC_SGLANG_WIDTH=served, plain.py).

This is the test that fails if the tree mask is not applied under CUDA graphs: the trees put
branch nodes of a shallow depth before the chain's deeper nodes, so under a causal mask every
node past the first branch sees its siblings, and its logits are not the target's after its own
path; the accepted tokens (and the bonus after them) then leave the target's greedy answer
within the first steps. The reference runs in a child process (one SGLang engine a process).
On the device: TURNSPEC_SGLANG_DRAFTER=/tmp/sgcarry/drafter."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from turnspec.engine.drafter import DEFAULT_DRAFTER_DIR
from turnspec.engine.sglang_plugin.arm import GROUP, NAME

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("sglang") is None
    or not __import__("torch").cuda.is_available()
    or NAME not in {ep.name for ep in entry_points(group=GROUP)},
    reason="needs sglang, CUDA and turnspec installed as SGLang's plugin")

ASKS = [
    "Repeat exactly: the blue heron waits at the edge of the reeds and strikes once.",
    "Write three short sentences about why the sea is salty.",
    "List the planets of the solar system, one per line, with one fact each.",
    "Explain in two sentences what a hash map is.",
    "Repeat exactly: order 4471 ships Tuesday to 12 Elm Street, Springfield, by courier.",
    "Give me a haiku about autumn rain.",
]
ENGINE = {"dtype": "bfloat16", "attention_backend": "triton", "sampling_backend": "pytorch",
          "log_level": "error", "cuda_graph_max_bs_decode": 8,
          "mem_fraction_static": float(os.environ.get("TURNSPEC_TEST_MEM", "0.15"))}
PARAMS = {"temperature": 0, "max_new_tokens": 96}
JSON_ASKS = [
    "Answer as JSON with one key, answer: what is the capital of France, and why is it famous?",
    "Answer as JSON with one key, answer: repeat exactly: the blue heron waits at the reeds.",
    "Answer as JSON with one key, answer: name three fruits that are red.",
]
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"],
          "additionalProperties": False}
JSON_PARAMS = {**PARAMS, "json_schema": json.dumps(SCHEMA)}
REFERENCE = r'''
import json, sys
import sglang
kw, jobs = json.loads(sys.argv[1]), json.loads(sys.argv[2])
eng = sglang.Engine(**kw)
out = [[o["output_ids"] for o in eng.generate(input_ids=ids, sampling_params=params)]
       for ids, params in jobs]
eng.shutdown()
print("OUT" + json.dumps(out))
'''


def prompts(tokenizer, asks: list[str]) -> list[list[int]]:
    return [list(tokenizer.apply_chat_template([{"role": "user", "content": a}],
                                               add_generation_prompt=True, tokenize=True,
                                               return_dict=True)["input_ids"]) for a in asks]


def counters(eng) -> dict:
    return (eng.get_server_info().get("internal_states") or [{}])[0].get("turnspec") or {}


def reference(kw: dict, jobs: list) -> list:
    """Each job's answers from SGLang without speculation, in a child process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TURNSPEC_SGLANG")}
    ref = subprocess.run([sys.executable, "-c", REFERENCE, json.dumps(kw), json.dumps(jobs)],
                         env=env, capture_output=True, text=True, timeout=600)
    assert ref.returncode == 0, ref.stderr[-3000:]
    return json.loads(ref.stdout.split("OUT", 1)[1])


def served(kw: dict, jobs: list) -> tuple[list, list[dict], list[str]]:
    """Each job's answers through DFLASH with the plugin armed (arm() first), the plugin's
    counters after each job, and the last job's finished texts."""
    import sglang

    eng = sglang.Engine(**kw, speculative_algorithm="DFLASH", speculative_draft_model_path=(
        os.environ.get("TURNSPEC_SGLANG_DRAFTER", str(DEFAULT_DRAFTER_DIR))))
    try:
        got, reports = [], []
        for ids, params in jobs:
            out = eng.generate(input_ids=ids, sampling_params=params)
            got.append([o["output_ids"] for o in out])
            reports.append(counters(eng))
        finished = [o["text"] for o in out if o["meta_info"]["finish_reason"]["type"] == "stop"]
    finally:
        eng.shutdown()
    return got, reports, finished


def assert_lossless(got: list, want: list, reports: list[dict], finished: list[str]) -> None:
    """Every answer under the grammar fits it; the answers are the target's (bf16: a tree
    verify and a one-token decode may round apart at a near-tie late in an answer,
    scripts/gpu/near_ties.py; a missing mask parts them within the first steps); the plugin's
    own step work never waited for the GPU."""
    assert finished, "no answer under the grammar finished within the token budget"
    for text in finished:
        doc = json.loads(text)
        assert set(doc) == {"answer"} and isinstance(doc["answer"], str), text
    pairs = [(g, w) for gs, ws in zip(got, want, strict=True) for g, w in zip(gs, ws, strict=True)]
    same = sum(g == w for g, w in pairs)
    assert same >= len(pairs) - 1, (same, reports)
    for g, w in pairs:
        assert g[:24] == w[:24], (g[:24], w[:24])
    assert reports[-1].get("host_syncs", 0) == 0, reports[-1].get("host_sync_sites")


def test_trees_answer_as_no_speculation_and_branches_pay(smollm2_dir: Path,
                                                         smollm2_tokenizer) -> None:
    from turnspec.engine.sglang_plugin.arm import arm
    from turnspec.engine.sglang_plugin.config import PluginConfig

    jobs = [(prompts(smollm2_tokenizer, ASKS), PARAMS), (prompts(smollm2_tokenizer, ASKS), PARAMS),
            (prompts(smollm2_tokenizer, JSON_ASKS), JSON_PARAMS)]
    kw = {**ENGINE, "model_path": str(smollm2_dir), "grammar_backend": "xgrammar"}
    want = reference(kw, jobs)
    # the first batch's answers are learned; every host sync in the plugin's step work is counted
    arm(PluginConfig(mode="trees", learn_tokens=100_000, sync_check=True))
    got, reports, finished = served(kw, jobs)
    plain, again, grammar = reports
    assert plain.get("mode") == "trees", plain
    assert plain.get("tree_rows", 0) > 0 and plain.get("tree_branch_paths", 0) > 0, plain
    # the learning store, holding the first batch's answers, drafts when the same asks come again;
    # grammar rows branch too, and accepted paths leave the chain there as well
    assert again.get("store_drafts", 0) > plain.get("store_drafts", 0), reports
    assert grammar["tree_branch_paths"] > again["tree_branch_paths"], reports
    assert_lossless(got, want, reports, finished)


def test_served_width_runs_plain_steps_among_the_trees(smollm2_dir: Path,
                                                        smollm2_tokenizer) -> None:
    """TURNSPEC_SGLANG_WIDTH=served: the pace tries each width at each batch size first (and
    batches under a grammar apart), so the first batch and the grammar batch run plain decode
    steps (plain.py: the target's own one-token verify graphs, the drafter's context kept)
    beside tree steps, and every answer is still the target's."""
    from turnspec.engine.sglang_plugin.arm import arm
    from turnspec.engine.sglang_plugin.config import PluginConfig

    jobs = [(prompts(smollm2_tokenizer, ASKS), PARAMS),
            (prompts(smollm2_tokenizer, ASKS[:1]), PARAMS),
            (prompts(smollm2_tokenizer, JSON_ASKS), JSON_PARAMS)]
    kw = {**ENGINE, "model_path": str(smollm2_dir), "grammar_backend": "xgrammar"}
    want = reference(kw, jobs)
    arm(PluginConfig(mode="trees", width="served", sync_check=True))
    got, reports, finished = served(kw, jobs)
    first, last = reports[0], reports[-1]
    assert first.get("plain_steps", 0) > 0 and first.get("tree_rows", 0) > 0, first
    assert last.get("plain_grammar_steps", 0) > 0, last  # grammar batches are paced apart
    assert_lossless(got, want, reports, finished)
