"""scripts/gpu/plugin_load_table.py: issue 53's load table and its bars, judged on the served
width's server where it ran, else the trees' (a 32-node one is shown beside it, not judged),
else the device plan."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts/gpu"))  # the table imports same_tokens_table as a sibling
spec = importlib.util.spec_from_file_location("plugin_load_table",
                                              ROOT / "scripts/gpu/plugin_load_table.py")
plugin_load_table = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plugin_load_table)


def _run(c: int, tok_s: float, ttft: float, tau: float | None = None) -> dict:
    throughput = {"output_tokens_per_s": tok_s} | ({"tau": tau} if tau else {})
    return {"load": {"concurrency": c}, "throughput": throughput, "requests": {"errors": 0},
            "metrics": {"ttft_ms": {"p50": ttft}}}


def _write(folder: Path, name: str, workload: str, cells: dict[int, tuple]) -> None:
    runs = [_run(c, *cell) for c, cell in sorted(cells.items())]
    (folder / f"{name}-{workload}.json").write_text(json.dumps({**runs[-1], "runs": runs}))


def test_bars_judge_trees_against_stock_and_none(tmp_path: Path) -> None:
    _write(tmp_path, "ts-none", "voice", {1: (400, 50.0), 8: (1700, 80.0), 32: (3500, 150.0)})
    _write(tmp_path, "ts-stock", "voice", {1: (500, 40.0, 3.1), 8: (1600, 80.0), 32: (2600, 170.0)})
    _write(tmp_path, "ts-device", "voice", {1: (600, 33.0), 8: (1900, 60.0), 32: (3100, 100.0)})
    # trees: 1.5x stock at one stream, TTFT within 1 ms of stock's only at 8, 3,390 at 32 streams
    # is just under 0.97 x 3,500 = 3,395 (the better of stock and none)
    _write(tmp_path, "ts-trees", "voice", {1: (750, 41.5, 4.4), 8: (1920, 80.9), 32: (3390, 90.0)})
    _write(tmp_path, "ts-trees32", "voice", {1: (100, 99.0), 8: (100, 99.0), 32: (100, 99.0)})
    _write(tmp_path, "sg-lookup", "voice", {1: (720, 40.0), 8: (1700, 80.0), 32: (3300, 90.0)})
    rows = {r["concurrency"]: r for r in plugin_load_table.table(tmp_path, "ts-trees")}
    assert rows[1]["bars"] == {"c1": True, "ttft": False, "own_server": True}
    assert rows[8]["bars"] == {"c8": True, "ttft": True, "own_server": False}
    assert rows[32]["bars"]["c32"] is False
    assert rows[1]["ts-trees"]["tau"] == 4.4 and rows[1]["ts-trees32"]["tok_s"] == 100
    # the served width, where it ran, is judged before the trees (plain decode at 32 streams)
    _write(tmp_path, "ts-served", "voice", {1: (750, 41.5), 8: (1920, 80.9), 32: (3450, 90.0)})
    rows = {r["concurrency"]: r for r in plugin_load_table.table(tmp_path, "ts-served")}
    assert rows[32]["bars"]["c32"] is True and rows[1]["bars"]["own_server"] is True


def test_missing_peers_leave_bars_open_and_judging_falls_back(tmp_path: Path, capsys) -> None:
    _write(tmp_path, "ts-stock", "generic", {1: (500, 20.0), 32: (5000, 40.0)})
    _write(tmp_path, "ts-device", "generic", {1: (600, 20.5), 32: (5200, 39.0)})
    rows = {r["concurrency"]: r for r in plugin_load_table.table(tmp_path)}
    assert rows[1]["bars"]["c1"] is True  # the device plan judged: 600 >= 1.2 x 500
    assert rows[32]["bars"]["c32"] is None  # no ts-none: no floor at 32 streams
    assert rows[1]["bars"]["own_server"] is None
    plugin_load_table.show(list(rows.values()))
    assert "c32:-" in capsys.readouterr().out
    assert plugin_load_table.floor("voice", 4, 500.0, 400.0) is None
    assert plugin_load_table.floor("voice", 32, 500.0, 400.0) == pytest.approx(485.0)


def test_rounds_are_judged_on_their_median(tmp_path: Path, capsys) -> None:
    def rounds(name: str, cells: list[tuple]) -> None:
        for k, cell in enumerate(cells, 1):
            run = _run(1, *cell)
            (tmp_path / f"{name}-voice-r{k}.json").write_text(json.dumps({**run, "runs": [run]}))

    rounds("ts-stock", [(400, 40.0), (500, 41.0), (300, 39.0)])  # median 400
    # trees: one slow window (375) and one fast (700) around a median of 600 = 1.5 x 400
    rounds("ts-trees", [(375, 40.0), (600, 40.5), (700, 42.0)])
    rounds("sg-lookup", [(610, 39.0), (500, 39.0), (640, 39.0)])  # median 610: within 5%
    _write(tmp_path, "ts-trees", "voice", {1: (10, 99.0)})  # a one-round file is left aside
    row = plugin_load_table.table(tmp_path, "ts-trees")[0]
    assert row["ts-trees"] == {"tok_s": 600, "ttft_p50": 40.5, "tau": None, "errors": 0,
                               "rounds": 3, "tok_s_range": [375, 700]}
    assert row["bars"] == {"c1": True, "ttft": True, "own_server": True}
    plugin_load_table.show([row])
    assert "600±27%" in capsys.readouterr().out  # (700 - 375) / 2 of 600


def test_paired_bars_take_each_rounds_own_ratio(tmp_path: Path, capsys) -> None:
    def rounds(name: str, cells: list[tuple]) -> None:
        for k, cell in enumerate(cells, 1):
            run = _run(1, *cell)
            (tmp_path / f"{name}-voice-r{k}.json").write_text(json.dumps({**run, "runs": [run]}))

    # rounds 1-2 on a fast host, 3-4 on one ~40% slower: every round has trees at 1.5x stock or
    # more, but the medians of the cells mix the hosts (trees 590 against stock 400: 1.475x)
    rounds("ts-stock", [(500, 40.0), (500, 40.0), (300, 40.0), (300, 40.0)])
    rounds("ts-trees", [(760, 40.0), (700, 40.0), (480, 40.0), (450, 40.0)])
    rounds("sg-lookup", [(790, 40.0), (735, 40.0), (500, 40.0), (470, 40.0)])  # +4, +5, +4, +4%
    row = plugin_load_table.table(tmp_path, "ts-trees")[0]
    assert row["bars"]["c1"] is False  # 590 < 1.5 x 400
    p = row["paired"]
    assert p["rounds"] == 4 and p["c1"] is True
    assert p["c1_of_floor"] == pytest.approx(1.0067, abs=1e-3)  # of 1.013, 0.933, 1.067, 1.0
    assert p["own_server"] is True and p["own_server_ratio"] == pytest.approx(1.043, abs=1e-3)
    plugin_load_table.show([row])
    assert "paired over 4 rounds: c1 1.01x the floor ok, own +4% ok" in capsys.readouterr().out
    # a lone round pairs nothing; a round one side lacks is left out of the pairs
    (tmp_path / "sg-lookup-voice-r4.json").unlink()
    assert plugin_load_table.table(tmp_path, "ts-trees")[0]["paired"]["own_server_ratio"] == \
        pytest.approx(1.0417, abs=1e-3)  # median of 1.039, 1.05, 1.042
    for k in (2, 3, 4):
        for name in ("ts-stock", "ts-trees", "sg-lookup"):
            (tmp_path / f"{name}-voice-r{k}.json").unlink(missing_ok=True)
    assert plugin_load_table.table(tmp_path, "ts-trees")[0]["paired"] is None


def test_folders_pool_their_rounds_pairing_only_within_each(tmp_path: Path, capsys) -> None:
    # two sessions, each with its own rounds 1-2 as plugin_load.sh names them: a round pairs
    # with its own folder's round, never with the other folder's round of the same number
    a, b = tmp_path / "a", tmp_path / "b"
    for folder, cells in ((a, {"ts-trees": (600, 700), "sg-lookup": (624, 728)}),  # +4%, +4%
                          (b, {"ts-trees": (300, 350), "sg-lookup": (297, 346.5)})):  # -1%, -1%
        folder.mkdir()
        for name, toks in cells.items():
            for k, tok in enumerate(toks, 1):
                run = _run(1, tok, 40.0)
                (folder / f"{name}-voice-r{k}.json").write_text(json.dumps({**run, "runs": [run]}))
    (b / "sg-lookup-voice-r2.json").unlink()  # b's round 2 has no peer: not a pair
    row = plugin_load_table.table([a, b], "ts-trees")[0]
    assert row["ts-trees"]["rounds"] == 4 and row["paired"]["rounds"] == 3
    assert row["paired"]["own_server_ratio"] == pytest.approx(1.04)  # median of 1.04, 1.04, 0.99
    sys.argv = ["plugin_load_table.py", str(a), str(b), "--own-peer", "ts-trees"]
    plugin_load_table.main()
    assert "paired over 3 rounds: own +4% ok" in capsys.readouterr().out
    (a / "ts-trees-voice-r1000.json").write_text((a / "ts-trees-voice-r1.json").read_text())
    with pytest.raises(ValueError, match="round 1000 of ts-trees-voice"):
        plugin_load_table.table([a, b], "ts-trees")
