"""scripts/gpu/sglang.sh's piece check, which `unpack` runs first: a piece that never reached
the device (its call was refused while later ones ran) is named, before tar reads a cut stream.
The test runs `sglang.sh check` only: `unpack` itself writes under /tmp."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def check(tmp_path: Path, pieces: list[int]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "scripts/gpu").mkdir(parents=True)
    shutil.copy(ROOT / "scripts/gpu/sglang.sh", tmp_path / "scripts/gpu/sglang.sh")
    for k in pieces:
        (tmp_path / f".gpu-carry/g{k}").mkdir(parents=True)
        (tmp_path / f".gpu-carry/g{k}/x_{k - 1}").write_bytes(b"piece")
    return subprocess.run(["bash", "scripts/gpu/sglang.sh", "check"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)


def test_a_gap_is_named(tmp_path: Path) -> None:
    run = check(tmp_path, [1, 3, 4])
    assert run.returncode == 1
    assert "pieces missing on this machine: g2 (here: g1 g3 g4);" in run.stderr


def test_no_pieces_at_all(tmp_path: Path) -> None:
    run = check(tmp_path, [])
    assert run.returncode == 1
    assert "pieces missing on this machine: all (here: none);" in run.stderr


def test_contiguous_pieces_pass(tmp_path: Path) -> None:
    run = check(tmp_path, [1, 2, 3])
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "pieces here: g1 g2 g3"
