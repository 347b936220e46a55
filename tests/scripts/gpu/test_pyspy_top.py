"""scripts/gpu/pyspy_top.py on py-spy's own raw output (two lines of a real
`py-spy record --subprocesses --threads --format raw` of a spawned child, whose command line
holds a ';')."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("pyspy_top", ROOT / "scripts/gpu/pyspy_top.py")
pyspy_top = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pyspy_top)

PARENT = 'process 6368:".venv/bin/python /tmp/busy.py"'
CHILD = ('process 6371:"/work/main/.venv/bin/python -B -c from multiprocessing.spawn import '
         'spawn_main; spawn_main(tracker_fd=4, pipe_handle=6) --multiprocessing-fork"')
RAW = "\n".join([
    f"{PARENT};thread (6368): MainThread;<module> (busy.py:9);sorted_ (busy.py:3) 150",
    f"{PARENT};thread (6368): MainThread;<module> (busy.py:9) 50",
    f"{PARENT};{CHILD};thread (6371): MainThread;<module> (<string>:1);"
    "spawn_main (multiprocessing/spawn.py:122);work (busy.py:4) 100",
]) + "\n"


def test_busy_seconds_per_process_and_thread(tmp_path: Path) -> None:
    f = tmp_path / "pyspy-x.txt"
    f.write_text(RAW)
    per = pyspy_top.parse(f)
    totals = {label.split()[0]: sum(c.values()) for label, c in per.items()}
    assert totals == {"6368": 200, "6371": 100}
    child = next(c for label, c in per.items() if label.startswith("6371"))
    # the ';' inside the child's command line did not leak into its frames
    assert list(child) == [("<module> (<string>)", "spawn_main (spawn.py)", "work (busy.py)")]


def test_report_ranks_processes_and_self_time(tmp_path: Path) -> None:
    f = tmp_path / "pyspy-x.txt"
    f.write_text(RAW)
    text = pyspy_top.report(f, rate=100.0, top=3)
    lines = text.splitlines()
    assert lines[1].startswith("-- 6368") and lines[1].endswith("2.0 busy s")
    assert "self: sorted_ (busy.py) 75%; <module> (busy.py) 25%" in lines[2]
    assert lines[4].startswith("-- 6371") and lines[4].endswith("1.0 busy s")
