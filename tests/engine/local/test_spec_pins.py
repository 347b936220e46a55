"""The speculative steps pinned: each turn's greedy output and the tokens every verify step
committed, on real turns with SmolLM2 and the default drafter, are what the engine served before
the speculation core was one (recorded at 530b7ee by scripts/analysis/spec_pins.py; the full
matrix, 128 turns and eight configurations, is docs/cpu-runs/spec-pins-full.json.gz)."""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PINS = Path(__file__).parent / "data" / "spec_pins_ci.json.gz"


def _pins_script():
    spec = importlib.util.spec_from_file_location("spec_pins", ROOT / "scripts/analysis/spec_pins.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["spec_pins"] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_the_engine_serves_the_pinned_steps(smollm2_dir: Path) -> None:
    pins = _pins_script()
    pinned = json.loads(gzip.decompress(PINS.read_bytes()))
    assert pinned["group"] == "ci" and set(pinned["steps"]) == {"b1", "b16-ds"}
    got = pins.run_group("ci")
    assert pins.differences(pinned, got) == []
    # not vacuous: drafts were accepted and extra branches won somewhere
    steps = [n for per_turn in got["steps"].values() for st in per_turn.values() for n in st]
    assert max(steps) > 1


def test_differences_names_the_turn_and_configuration() -> None:
    pins = _pins_script()
    pinned = {"turns": {"a": [1, 2, 3]}, "steps": {"b1": {"a": [1, 2]}}}
    assert pins.differences(pinned, pinned) == []
    got = {"turns": {"a": [1, 2, 4]}, "steps": {"b1": {"a": [2, 1]}}}
    assert pins.differences(pinned, got) == ["a: tokens differ",
                                              "b1 a: steps [2, 1] != pinned [1, 2]"]
