"""scripts/gpu/same_tokens_table.py: turnspec against SGLang per mode and concurrency, with the
issue's bars (tok/s >= 0.97x, TTFT p50 +1 ms, p90 +2 ms) checked in the gated modes only."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("same_tokens_table",
                                              ROOT / "scripts/gpu/same_tokens_table.py")
same_tokens_table = importlib.util.module_from_spec(spec)
spec.loader.exec_module(same_tokens_table)


def _run(c: int, tok_s: float, p50: float, p90: float) -> dict:
    return {"load": {"concurrency": c}, "throughput": {"output_tokens_per_s": tok_s},
            "requests": {"errors": 0},
            "metrics": {"ttft_ms": {"p50": p50, "p90": p90}, "tpot_ms": {"p50": 1.2},
                        "prompt_tokens": {"mean": 274.0}}}


def _sweep(*runs: dict) -> dict:
    return {**runs[-1], "runs": list(runs)}


def test_rows_and_bars(tmp_path: Path, capsys) -> None:
    ts = _sweep(_run(1, 700, 18.9, 21.0), _run(8, 1900, 45.5, 50.0))
    sg = _sweep(_run(1, 698, 18.4, 20.0), _run(8, 1767, 44.1, 47.0))
    for mode in ("none", "grammar", "prompt"):
        (tmp_path / f"ts-{mode}.json").write_text(json.dumps(ts))
        (tmp_path / f"sg-{mode}.json").write_text(json.dumps(sg))
    out = tmp_path / "t.json"
    assert same_tokens_table.main([str(tmp_path), "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    by = {(r["mode"], r["concurrency"]): r for r in rows}
    assert by[("none", 1)]["meets"] is True  # +0.5 ms p50, +1 ms p90, 1.003x
    assert by[("grammar", 8)]["meets"] is False  # p50 +1.4 ms, p90 +3 ms
    assert by[("prompt", 1)]["meets"] is None  # not gated
    assert by[("none", 8)]["tok_s_ratio"] == 1900 / 1767
    table = capsys.readouterr().out
    assert "MISS" in table and " ok" in table


def test_single_level_runs_and_a_missing_pair(tmp_path: Path) -> None:
    (tmp_path / "ts-none.json").write_text(json.dumps(_run(1, 100, 10, 12)))
    (tmp_path / "sg-none.json").write_text(json.dumps(_run(1, 100, 10, 12)))
    assert same_tokens_table.main([str(tmp_path)]) == 0
    assert same_tokens_table.main([str(tmp_path / "empty")]) == 1
