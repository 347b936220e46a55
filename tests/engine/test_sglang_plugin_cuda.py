"""turnspec's speculator inside SGLang on a GPU (skipped without sglang, CUDA and the plugin's
entry point): `sglang.Engine` with DFLASH, our exported drafter and the plugin armed.

- a copy-heavy greedy turn: the plugin plans every decode step and swaps in prompt-lookup blocks;
- the same under a JSON-schema grammar (SGLang's grammar walk over the verify block): grammar rows
  are swapped too, and every answer still parses and fits the schema, so the masks were built
  along the block that was verified.

Lossless output against SGLang without speculation is scripts/gpu/plugin_check.py's (two engines
on the independent set). On the device: TURNSPEC_SGLANG_DRAFTER=/tmp/sgcarry/drafter;
TURNSPEC_TEST_PLAN_AT=verify runs it with the plan on the host (one engine a process)."""

from __future__ import annotations

import importlib.util
import json
import os
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

TEXT = ("The blue heron waits at the edge of the reeds, counts the ripples, and strikes once "
        "when the silver fish turns toward the light near the old stone bridge.")
SCHEMA = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 200}},
          "required": ["text"], "additionalProperties": False}


def prompt(tokenizer, ask: str) -> list[int]:
    msgs = [{"role": "system", "content": "You repeat the user's text exactly."},
            {"role": "user", "content": ask}]
    return list(tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True,
                                              return_dict=True)["input_ids"])


@pytest.fixture(scope="module")
def engine(smollm2_dir: Path):
    import sglang

    from turnspec.engine.sglang_plugin.arm import arm
    from turnspec.engine.sglang_plugin.config import PluginConfig

    # the lookup block wherever a continuation exists, so the swaps do not hinge on how sure
    # the drafter is of a copy (the default rule's choices are plugin_check.py's)
    arm(PluginConfig(mode="lookup", lookup_below=64.0,
                     plan_at=os.environ.get("TURNSPEC_TEST_PLAN_AT", "device")))
    eng = sglang.Engine(
        model_path=str(smollm2_dir), dtype="bfloat16", attention_backend="triton",
        sampling_backend="pytorch", grammar_backend="xgrammar", log_level="error",
        mem_fraction_static=float(os.environ.get("TURNSPEC_TEST_MEM", "0.15")),
        cuda_graph_max_bs_decode=8, speculative_algorithm="DFLASH",
        speculative_draft_model_path=os.environ.get("TURNSPEC_SGLANG_DRAFTER",
                                                    str(DEFAULT_DRAFTER_DIR)))
    yield eng
    eng.shutdown()


def counters(eng) -> dict:
    states = eng.get_server_info().get("internal_states") or [{}]
    report = states[0].get("turnspec")
    assert report is not None, f"no plugin counters in SGLang's server info: {states[0]}"
    return report


def test_greedy_turns_are_planned_and_lookup_blocks_swapped_in(engine, smollm2_tokenizer) -> None:
    before = counters(engine)
    ids = [prompt(smollm2_tokenizer, f"Repeat: {TEXT} Again: {TEXT}")] * 4
    out = engine.generate(input_ids=ids, sampling_params={"temperature": 0,
                                                          "max_new_tokens": 64})
    after = counters(engine)
    assert all(o["meta_info"]["completion_tokens"] > 8 for o in out)
    assert after.get("steps", 0) > before.get("steps", 0)
    assert after.get("rows_swapped", 0) > before.get("rows_swapped", 0), after


def test_grammar_rows_are_swapped_and_stay_valid(engine, smollm2_tokenizer) -> None:
    before = counters(engine)
    ids = [prompt(smollm2_tokenizer, f'Answer as JSON {{"text": ...}} with this text: {TEXT} '
                  f'The text again: {TEXT}')] * 4
    out = engine.generate(input_ids=ids, sampling_params={
        "temperature": 0, "max_new_tokens": 128, "json_schema": json.dumps(SCHEMA)})
    after = counters(engine)
    for o in out:
        if o["meta_info"]["finish_reason"]["type"] == "stop":
            doc = json.loads(o["text"])
            assert set(doc) == {"text"} and isinstance(doc["text"], str), o["text"]
    assert any(o["meta_info"]["finish_reason"]["type"] == "stop" for o in out), out
    assert after.get("grammar_rows_swapped", 0) > before.get("grammar_rows_swapped", 0), after
