"""`turnspec bench frontend --tool-sets` end to end on two sets: a child server of this
checkout (fake fixed-rate engine) and a "baseline" child from a second root (here the same
tree), every kind of turn answered, table and JSON (no timing asserts)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import turnspec
from turnspec.benchmarks import frontend as bench_frontend


def test_tool_sets_bench_runs_every_kind_on_both_servers(tmp_path, smollm2_dir, capsys):
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "turnspec").symlink_to(Path(turnspec.__file__).parent)
    parser = argparse.ArgumentParser()
    bench_frontend.register(parser.add_subparsers(dest="bench_command"))
    out = tmp_path / "cold.json"
    args = parser.parse_args(["frontend", "--model", str(smollm2_dir), "--tool-sets", "2",
                              "--first-token-ms", "2", "--interval-ms", "2",
                              "--warm-gap-ms", "50", "--baseline-root",
                              str(tmp_path / "base"), "--json", str(out)])
    assert args.func(args) == 0
    table = capsys.readouterr().out
    for row in ("this      first", "this      preloaded", "baseline  next"):
        assert row in table
    data = json.loads(out.read_text())
    assert set(data["summary"]) == {"this", "baseline"}
    assert set(data["summary"]["this"]) == {"first", "next", "warmed", "preloaded"}
    assert set(data["summary"]["baseline"]) == {"first", "next"}
    for kinds in data["summary"].values():
        for row in kinds.values():
            assert (row["n"], row["errors"]) == (2, 0)
            assert row["host_overhead_ms"] and row["grammar_ms"] and row["ttft_ms"]
