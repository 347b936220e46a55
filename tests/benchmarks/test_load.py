"""`turnspec bench load` end to end: both loaders on one datagen file, rows identical, JSON."""

from __future__ import annotations

import json
import random
from pathlib import Path

from turnspec.cli.main import main
from turnspec.speculator.data import Sample


def _data(tmp_path: Path) -> Path:
    rng = random.Random(0)
    lines = []
    for i in range(120):
        p, r = rng.randint(3, 30), rng.randint(2, 10)
        lines.append(Sample(f"s{i}", "heldout" if i % 9 == 0 else "train", "tools",
                            tuple(rng.randrange(49_152) for _ in range(p + r)),
                            (0,) * p + (1,) * r).to_json() + "\n")
    (tmp_path / "samples.jsonl").write_text("".join(lines))
    return tmp_path


def test_bench_load_compares_both_loaders(tmp_path: Path, capsys) -> None:
    out = tmp_path / "load.json"
    rc = main(["bench", "load", "--data", str(_data(tmp_path)), "--workers", "1,2",
               "--json", str(out)])
    assert rc == 0
    record = json.loads(out.read_text())
    assert [(r["loader"], r["workers"]) for r in record["rows"]] == [
        ("read_samples + PackedSplit.build", 1), ("load_train_data", 1), ("load_train_data", 2)]
    assert all(r["identical"] and r["seconds"] > 0 for r in record["rows"])
    assert record["train_rows"] == 120 - 14
    assert "load_train_data" in capsys.readouterr().out


def test_bench_load_rejects_zero_workers(tmp_path: Path, capsys) -> None:
    rc = main(["bench", "load", "--data", str(_data(tmp_path)), "--workers", "0",
               "--json", str(tmp_path / "x.json")])
    assert rc == 2
    assert "expected positive counts" in capsys.readouterr().err
