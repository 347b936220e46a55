"""scripts/gpu/plugin_check.py `compare`: τ and answers as no speculation per split, on runs of
one dtype only; in float16 (fewer near-ties than bf16) every turn that differs is named."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("plugin_check", ROOT / "scripts/gpu/plugin_check.py")
plugin_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plugin_check)


def _write(folder: Path, mode: str, dtype: str, answers: dict[str, list[int]]) -> None:
    rows = [{"split": "independent-voice", "id": rid, "output_ids": ids, "verify_steps": 2,
             "tokens": len(ids)} for rid, ids in answers.items()]
    (folder / f"{mode}.json").write_text(json.dumps({"mode": mode, "dtype": dtype, "wall_s": 1.0,
                                                     "rows": rows, "plugin": None}))


def test_float16_names_every_turn_that_differs(tmp_path: Path, capsys) -> None:
    _write(tmp_path, "none", "float16", {"a": [1, 2, 3, 4], "b": [5, 6]})
    _write(tmp_path, "trees", "float16", {"a": [1, 2, 3, 4], "b": [5, 7]})
    plugin_check.compare(tmp_path)
    out = capsys.readouterr().out
    assert "trees       independent-voice        1.50        6      1/2" in out
    assert "differs from none on: ['b']" in out


def test_bf16_runs_count_without_names(tmp_path: Path, capsys) -> None:
    _write(tmp_path, "none", "bfloat16", {"a": [1, 2]})
    _write(tmp_path, "stock", "bfloat16", {"a": [1, 3]})
    plugin_check.compare(tmp_path)
    out = capsys.readouterr().out
    assert "0/1" in out and "differs from none" not in out


def test_runs_of_two_dtypes_are_refused(tmp_path: Path) -> None:
    _write(tmp_path, "none", "bfloat16", {"a": [1, 2]})
    _write(tmp_path, "trees", "float16", {"a": [1, 2]})
    with pytest.raises(SystemExit, match="several dtypes"):
        plugin_check.compare(tmp_path)
