"""speculator/evaluate.py's helpers for the scripts that replay one split."""

from __future__ import annotations

import pytest

from turnspec.engine.drafter.folder import DEFAULT_DRAFTER_DIR
from turnspec.speculator.evaluate import source_turns

HELD = DEFAULT_DRAFTER_DIR / "heldout.jsonl"


def test_source_turns_spreads_n_turns_of_one_split() -> None:
    turns = source_turns(HELD, "generic-heldout", 4)
    assert len(turns) == 4 and all(t.source == "generic" and t.split == "heldout" for t in turns)


def test_source_turns_names_the_splits_it_found() -> None:
    with pytest.raises(ValueError, match=r"source 'voice': not in .*expected one of "
                                         r"\['generic-heldout', 'tools-heldout'"):
        source_turns(HELD, "voice", 4)


def test_a_datastore_holding_a_scored_answer_is_refused(tmp_path) -> None:
    """speculator eval --datastore: a store built from the whole samples.jsonl of a datagen run
    (its held-out turns too) would hand the replay their answers; its train split is fine."""
    from turnspec.speculator import evaluate
    from turnspec.speculator.data import Sample

    train = Sample("a", "train", "recorded", (1, 2, 3, 4, 5), (0, 0, 1, 1, 1))
    held = Sample("b", "heldout", "recorded", (1, 2, 6, 7, 8), (0, 0, 1, 1, 1))
    data = tmp_path / "samples.jsonl"
    data.write_text(train.to_json() + "\n" + held.to_json() + "\n")
    store = tmp_path / "store-train.jsonl"
    store.write_text(train.to_json() + "\n")
    kw = dict(drafter="default", model_dir="unused", block_sizes=[16], samples=8, max_len=64,
              device="cpu", with_train=False, json_out=None, lookup=True, branches=3)
    with pytest.raises(ValueError, match=r"holds the answers of 1 of the 1 held-out turns"):
        next(evaluate.evaluate_sets([data], datastore=data, **kw))
    from turnspec.engine.spec.proposers.datastore import read_answers

    # the train split alone: nothing to refuse
    evaluate.no_scored_answers_in(store, list(read_answers(store)), [held])
