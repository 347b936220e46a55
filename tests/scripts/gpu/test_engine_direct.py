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
from turnspec.loadtest.generate_client import sglang_block

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
    meta = {"request_received_ts": 99.999, "forward_entry_time": 100.0,
            "prefill_finished_time": 100.02, "request_finished_ts": 100.07, "spec_verify_ct": 11,
            "response_sent_to_client_ts": 100.023}
    row = engine_direct.turn_row(45.0, [5.0, 10.0], 50, sglang_block(meta, 50))
    assert row["e2e_ms"] == pytest.approx(45.0) and row["gaps_ms"] == pytest.approx([5.0, 10.0])
    assert row["prefill_ms"] == pytest.approx(20.0) and row["decode_ms"] == pytest.approx(50.0)
    assert row["step_ms"] == pytest.approx(50 / 11) and row["tau"] == pytest.approx(50 / 11)
    assert row["engine_in_ms"] == pytest.approx(1.0) and row["first_back_ms"] == pytest.approx(3.0)
    bare = engine_direct.turn_row(10.0, [], 1, sglang_block({}, 1))  # metrics off
    assert set(bare) == {"e2e_ms", "tokens", "gaps_ms"}
    s = engine_direct.summary([row, bare])
    assert s["e2e_ms"]["n"] == 2 and s["prefill_ms"]["n"] == 1 and s["gaps_ms"]["n"] == 2
    assert s["first_back_ms"]["p50"] == pytest.approx(3.0)
    assert s["gaps_ms"]["p50"] == pytest.approx(7.5)


@pytest.fixture()
def recorder():
    from tests.loadtest.sglang_recorder import GenerateRecorder

    rec = GenerateRecorder().start()
    yield rec
    rec.stop()


def test_url_plays_the_turns_on_a_generate_server(rendered: Path, recorder, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """--url: the same turns, in order, on a server speaking SGLang's /generate (a recording
    peer: SGLang does not run on CPU machines), its last chunk's clocks read as the Engine's."""
    recorder.incremental = True
    recorder.final_meta = {"request_received_ts": 9.999,
                           "forward_entry_time": 10.0, "prefill_finished_time": 10.015,
                           "request_finished_ts": 10.045, "spec_verify_ct": 2}
    out = tmp_path / "sg.json"
    monkeypatch.setattr("sys.argv", ["engine_direct", str(rendered), "--url",
                                     f"http://127.0.0.1:{recorder.port}", "--turns", "3",
                                     "--warmup", "1", "--max-tokens", "7", "--json", str(out)])
    engine_direct.main()
    want = engine_direct.turns_of(rendered, 4)
    assert [b["input_ids"] for b in recorder.bodies] == [ids for ids, _ in want]
    first = recorder.bodies[0]
    assert first["stream"] and first["sampling_params"]["max_new_tokens"] == 7
    assert first["sampling_params"]["structural_tag"] == want[0][1]
    summary = json.loads(out.read_text())["summary"]
    assert summary["e2e_ms"]["n"] == 3 and summary["gaps_ms"]["n"] == 3 * 2  # 3 chunks a turn
    assert summary["prefill_ms"]["p50"] == pytest.approx(15.0)
    assert summary["step_ms"]["p50"] == pytest.approx(15.0) and summary["tau"]["p50"] == 1.5
    assert "step_ms" in capsys.readouterr().out


def test_url_refuses_a_profile_and_names_a_server_error(rendered: Path, recorder,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{recorder.port}"
    monkeypatch.setattr("sys.argv", ["engine_direct", str(rendered), "--url", url,
                                     "--profile-dir", "/tmp/x"])
    with pytest.raises(SystemExit, match="profile_step.sh"):
        engine_direct.main()
    recorder.error = "grammar compile failed"
    monkeypatch.setattr("sys.argv", ["engine_direct", str(rendered), "--url", url, "--turns", "1"])
    with pytest.raises(SystemExit, match="grammar compile failed"):
        engine_direct.main()
