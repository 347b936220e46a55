"""`turnspec workload` (cli/workload.py), driven through its own argparse registration."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from turnspec.cli import workload


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="turnspec")
    workload.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def test_export_conversations_and_generic(tmp_path: Path, capsys) -> None:
    out = tmp_path / "held.jsonl"
    assert run(["workload", "export", "--out", str(out), "--n", "40", "--seed", "2", "--split", "heldout"]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 40 and {r["split"] for r in records} == {"heldout"}
    generic = tmp_path / "generic.jsonl"
    assert run(["workload", "export", "--out", str(generic), "--generic"]) == 0
    assert len(generic.read_text().splitlines()) >= 200
    assert "wrote 40 records" in capsys.readouterr().out


def test_stats(capsys) -> None:
    assert run(["workload", "stats", "--n", "100"]) == 0
    text = capsys.readouterr().out
    assert "100 conversations" in text and "tool_call=" in text and "heldout=" in text
