"""scripts/analysis/arms_table.py: drafters scored on the same turns, with paired gains."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from turnspec.speculator.tau import tau_difference_interval, tau_interval

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("arms_table", ROOT / "scripts/analysis/arms_table.py")
arms_table = importlib.util.module_from_spec(spec)
spec.loader.exec_module(arms_table)


def _write(folder: Path, arm: str, rows: list[list[int]], one_block: bool = False) -> None:
    """tau-ARM-evalset.json as `speculator eval --json` writes it, one split at B=16: under
    "by_block" when several block sizes were asked for, the block's own dict when one was."""
    tokens, steps = sum(t for t, _ in rows), sum(s for _, s in rows)
    e = {"tau": tokens / steps, "tokens": tokens, "steps": steps, "samples": len(rows),
         "ci90": list(tau_interval([t for t, _ in rows], [s for _, s in rows])), "rows": rows}
    run = {"block_size": 16, "eval": {"independent-voice": e}}
    (folder / f"tau-{arm}-evalset.json").write_text(json.dumps(run if one_block else {"by_block": {"16": run}}))


def test_gain_is_paired_over_the_same_turns(tmp_path: Path) -> None:
    base = [[20, 10], [159, 11], [40, 14], [12, 6]] * 6
    better = [[t, s - (i % 2 == 0)] for i, (t, s) in enumerate(base)]
    _write(tmp_path, "default", base)
    _write(tmp_path, "mix", better, one_block=True)   # `eval --block-size 16` alone
    table = arms_table.compare(arms_table.load_arms(tmp_path), "default")
    r = table["mix"]["independent-voice"]["B16"]
    want = sum(t for t, _ in better) / sum(s for _, s in better) - sum(t for t, _ in base) / sum(
        s for _, s in base)
    assert r["gain"] == round(want, 3) and r["turns"] == 24
    expect = tau_difference_interval([t for t, _ in base], [s for _, s in base], [s for _, s in better])
    assert r["gain_ci90"] == [round(x, 2) for x in expect] and r["gain_ci90"][0] > 0
    assert table["default"]["independent-voice"]["B16"]["gain"] == 0


def test_different_turns_are_refused(tmp_path: Path) -> None:
    _write(tmp_path, "default", [[20, 10], [30, 6]])
    _write(tmp_path, "today", [[21, 10], [30, 6]])   # another answer: not the same turns
    out = subprocess.run([sys.executable, str(ROOT / "scripts/analysis/arms_table.py"), str(tmp_path)],
                         capture_output=True, text=True)
    assert out.returncode != 0 and "different turns" in out.stderr
