"""scripts/gpu/engine_direct.py's host side: the turns it plays, read from a real `turnspec
workload render` file, and the figures it takes from a turn's chunks and SGLang's meta_info
(the Engine itself needs a GPU)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from turnspec.benchmarks.same_tokens import render_file, scripts_from
from turnspec.engine.chat import ChatTemplate

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("engine_direct", ROOT / "scripts/gpu/engine_direct.py")
engine_direct = importlib.util.module_from_spec(spec)
spec.loader.exec_module(engine_direct)


@pytest.fixture(scope="module")
def rendered(smollm2_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("direct") / "voice-ids.jsonl"
    render_file(ChatTemplate.from_model_dir(smollm2_dir),
                scripts_from(str(ROOT / "speculator/eval/voice.jsonl"), 0, 96), str(out),
                conversations=3, tools_in_prompt=True, model="SmolLM2")
    return out


def test_turns_come_in_file_order_with_their_auto_tags(rendered: Path) -> None:
    lines = [json.loads(x) for x in rendered.read_text().splitlines()]
    want = [(ids, line["turnspec_tokens"]["structural_tags"]["auto"])
            for line in lines for ids in line["turnspec_tokens"]["turns"].values()]
    assert engine_direct.turns_of(rendered, 1000) == want
    assert engine_direct.turns_of(rendered, 2) == want[:2]
    first, second = want[0][0], want[1][0]
    assert second[: len(first)] == first  # a conversation's next turn extends its prompt


def test_no_turns_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(SystemExit, match="workload render"):
        engine_direct.turns_of(tmp_path / "empty.jsonl", 5)


def test_a_turn_row_reads_sglang_clocks() -> None:
    meta = {"forward_entry_time": 100.0, "prefill_finished_time": 100.02,
            "request_finished_ts": 100.07, "spec_verify_ct": 11, "completion_tokens": 50}
    row = engine_direct.turn_row(5.0, [5.03, 5.035, 5.045], meta)
    assert row["e2e_ms"] == pytest.approx(45.0) and row["gaps_ms"] == pytest.approx([5.0, 10.0])
    assert row["prefill_ms"] == pytest.approx(20.0) and row["decode_ms"] == pytest.approx(50.0)
    assert row["step_ms"] == pytest.approx(5.0) and row["tau"] == pytest.approx(50 / 11)
    bare = engine_direct.turn_row(5.0, [5.01], {"completion_tokens": 1})  # metrics off
    assert set(bare) == {"e2e_ms", "tokens", "gaps_ms"}
    s = engine_direct.summary([row, bare])
    assert s["e2e_ms"]["n"] == 2 and s["prefill_ms"]["n"] == 1 and s["gaps_ms"]["n"] == 2
    assert s["gaps_ms"]["p50"] == pytest.approx(7.5)
