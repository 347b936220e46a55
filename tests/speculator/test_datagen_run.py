"""`turnspec speculator datagen` renders its prompts in a child process while the engine loads,
in parts, with the model folder's chat template (the engine's template must render them the
same: tests/speculator/test_datagen_target.py)."""

from __future__ import annotations

import pytest

from turnspec.engine.chat import ChatTemplate
from turnspec.speculator.datagen_run import FileParts, PromptParts, run_datagen
from turnspec.speculator.prompts import build_prompt_items

BUILD = dict(tool_conversations=4, heldout_conversations=1, generic=6, max_prompt_tokens=4096,
             synthetic_conversations=2, shard=0, num_shards=1)


def test_prompt_parts_come_from_a_child_in_order(smollm2_dir):
    whole, skipped = build_prompt_items(ChatTemplate.from_model_dir(smollm2_dir).render_many, **BUILD)
    parts = PromptParts(str(smollm2_dir), BUILD, 3)
    try:
        got = [parts.next_part() for _ in range(3)]
        assert parts.next_part() is None                        # after the last part
    finally:
        parts.close()
    assert all(got) and len(got[0]) < len(whole)
    assert sorted(it.id for p in got for it in p) == sorted(it.id for it in whole)
    assert parts.skipped == skipped
    st = parts.stats()
    assert st["prompt_parts"] == st["prompt_parts_used"] == 3
    assert 0 <= st["prompts_first_part_s"] <= st["prompts_build_s"]


def test_a_failed_or_killed_renderer_stops_the_run(smollm2_dir):
    bad = PromptParts(str(smollm2_dir), {**BUILD, "generic_heldout_frac": 2.0}, 2)
    try:
        with pytest.raises(SystemExit, match=r"rendering prompt part 0 failed:(.|\n)*generic_heldout_frac"):
            bad.next_part()
    finally:
        bad.close()
    killed = PromptParts(str(smollm2_dir), {**BUILD, "tool_conversations": 4000}, 2)
    try:
        killed._proc.kill()
        with pytest.raises(SystemExit, match="the prompt renderer exited"):
            killed.next_part()
    finally:
        killed.close()


def _datagen_args(*argv: str):
    import argparse

    from turnspec.cli.speculator import register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["speculator", "datagen", "--out", "unused", *argv])


def test_eval_set_prompts_come_from_the_files(smollm2_dir):
    """`datagen --eval-set`: the independent set's 465 prompts (346 assistant turns, 119 generic),
    all held out, in one part; --shard and a second prompt source are refused."""
    parts = FileParts.from_args(_datagen_args("--eval-set"), str(smollm2_dir))
    items = parts.next_part()
    assert parts.next_part() is None and parts.skipped == 0
    assert len(items) == 465 and {it.split for it in items} == {"heldout"}
    assert {it.source for it in items} == {"independent-voice", "independent-generic"}
    assert parts.describes(None)["prompt_source"] == "eval-set"
    with pytest.raises(SystemExit, match="--shard applies to workload prompts only"):
        FileParts.from_args(_datagen_args("--eval-set", "--shard", "0/2"), str(smollm2_dir))
    with pytest.raises(SystemExit, match="expected at most one prompt source"):
        run_datagen(_datagen_args("--eval-set", "--from-conversations", "x"))
