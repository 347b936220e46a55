"""`turnspec bench cpu-gemm` end to end on the real model (tiny budget): a row per backend, the
measured plan and transformers, all token-identical; the JSON carries the plan it measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from turnspec.cli.main import main
from turnspec.engine.model.cpu_gemm_plan import BACKENDS, MARGIN, ROW_BOUNDS


def test_bench_cpu_gemm_rows_and_plan(smollm2_dir: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "gemm.json"
    rc = main(["bench", "cpu-gemm", "--model", str(smollm2_dir), "--prompts", "1", "--batch", "3",
               "--max-new-tokens", "6", "--repeat", "2", "--json", str(out)])
    assert rc == 0
    r = json.loads(out.read_text())
    assert [x["config"] for x in r["rows"]] == ["measured plan", *BACKENDS, "hf"]
    assert all(x["identical"] for x in r["rows"]), r["rows"]
    assert all(len(x["seq_passes"]) == 2 and x["seq_tok_s"] > 0 for x in r["rows"])
    assert r["rows"][-1]["batch_tok_s"] is None and r["rows"][0]["batch_tok_s"] > 0
    assert list(r["plan"]) == [str(b) for b in ROW_BOUNDS]
    assert set(r["plan"].values()) <= set(BACKENDS)
    # the plan's choice at each bound is the backend it measured fastest there, if that beat
    # F.linear by MARGIN; else F.linear
    for bound, ms in zip(ROW_BOUNDS, r["plan_measured_ms"], strict=True):
        best = min(ms, key=ms.get)
        assert r["plan"][str(bound)] == (best if ms[best] <= (1 - MARGIN) * ms["torch"]
                                         else "torch")
    assert "measured plan" in capsys.readouterr().out


def test_bench_cpu_gemm_wants_the_measured_plan(smollm2_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="expected --device cpu, fp32 and --cpu-gemm auto"):
        main(["bench", "cpu-gemm", "--model", str(smollm2_dir), "--cpu-gemm", "torch",
              "--json", str(tmp_path / "x.json")])
