"""`turnspec bench frontend` end to end on a tiny setting: table and JSON (no timing asserts)."""

from __future__ import annotations

import argparse
import json

from turnspec.benchmarks import frontend as bench_frontend


def test_bench_frontend_writes_table_and_json(tmp_path, smollm2_dir, capsys):
    parser = argparse.ArgumentParser()
    bench_frontend.register(parser.add_subparsers(dest="bench_command"))
    out = tmp_path / "bf.json"
    args = parser.parse_args(["frontend", "--model", str(smollm2_dir), "--concurrency", "3",
                              "--requests", "2", "--tokens", "4", "--first-token-ms", "2",
                              "--interval-ms", "2", "--json", str(out)])
    assert args.func(args) == 0
    table = capsys.readouterr().out
    for name in ("in-process", "http", "ws", "grpc"):
        assert f"\n{name} " in table
    data = json.loads(out.read_text())
    assert set(data["results"]) == {"in-process", "http", "ws", "grpc"}
    for r in data["results"].values():
        assert r["ok"] == r["total"] == 6
        assert r["tokens"] == 6 * 3  # lags of tokens 1..3 per request
    assert set(data["overhead"]) == {"http", "ws", "grpc"}
    assert data["config"]["concurrency"] == 3


def test_bench_frontend_measures_tracing_on_against_off(tmp_path, smollm2_dir, capsys):
    parser = argparse.ArgumentParser()
    bench_frontend.register(parser.add_subparsers(dest="bench_command"))
    out = tmp_path / "bf.json"
    args = parser.parse_args(["frontend", "--model", str(smollm2_dir), "--concurrency", "2",
                              "--requests", "2", "--tokens", "4", "--first-token-ms", "2",
                              "--interval-ms", "2", "--transports", "ws,grpc",
                              "--trace", "both", "--json", str(out)])
    assert args.func(args) == 0
    assert "tracing on (OTLP/gRPC to a local receiver" in capsys.readouterr().out
    data = json.loads(out.read_text())
    assert set(data["results"]) == {"in-process", "ws", "grpc", "ws+trace", "grpc+trace"}
    assert set(data["tracing_overhead"]) == {"ws", "grpc"}
    # every traced turn (2 streams x 2 requests + warm-up) exported its root and hop spans
    assert data["spans_received"] >= 2 * 4 * 7
