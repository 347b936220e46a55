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
