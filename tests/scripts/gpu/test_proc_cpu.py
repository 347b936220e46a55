"""scripts/gpu/proc_cpu.py: the CPU time of a process group's members, on this machine's /proc
(a real child in its own session, busy, beside an idle one)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("proc_cpu", ROOT / "scripts/gpu/proc_cpu.py")
proc_cpu = importlib.util.module_from_spec(spec)
spec.loader.exec_module(proc_cpu)

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="Linux /proc only")

BUSY = "import os, time\nif os.fork() == 0:\n    time.sleep(30)\nelse:\n    t = time.time()\n" \
       "    while time.time() - t < 30: pass\n"


def test_the_busy_member_of_a_group_is_named_first() -> None:
    child = subprocess.Popen([sys.executable, "-c", BUSY], start_new_session=True)
    try:
        time.sleep(0.3)
        before = proc_cpu.snap(child.pid)
        members = {pid: v for pid, v in before.items() if pid != proc_cpu.HOST}
        assert len(members) == 2 and all("python" in name for name, _ in members.values())
        time.sleep(1.0)
        rows = proc_cpu.diff(before, proc_cpu.snap(child.pid), 1.0)
        assert rows[0].startswith("host: ")  # the host's line first
        assert f"(pid {child.pid})" in rows[1]  # the parent spins; its child sleeps
        assert len(rows) == 2  # the sleeping child used no CPU
        assert proc_cpu.snap(os.getpgrp()) and str(child.pid) not in proc_cpu.snap(os.getpgrp())
    finally:
        os.killpg(child.pid, 9)
        child.wait()


def test_the_host_line_splits_busy_idle_and_steal() -> None:
    # user nice system idle iowait irq softirq steal: 60 busy, 30 idle, 10 stolen of 100
    line = proc_cpu.host_line([0] * 8, [40, 0, 20, 25, 5, 0, 0, 10])
    assert line.startswith("host:  60.0% busy, 10.0% steal over ")
    assert len(proc_cpu.host_ticks()) == 8


def test_usage_is_an_error_with_the_doc(capsys: pytest.CaptureFixture[str]) -> None:
    assert proc_cpu.main(["what"]) == 2
    assert "proc_cpu.py snap PGID" in capsys.readouterr().err


def test_pace_summarises_its_samples_and_each_second() -> None:
    lines = proc_cpu.pace_lines([(0.0, 500.0), (0.5, 700.0), (1.2, 900.0), (1.4, 1100.0),
                                 (2.1, 400.0)])
    assert lines[0].startswith("host pace: 700 us median, 1100 p90 over 5 samples")
    assert lines[1] == "host pace by second: 600 1000 400"
    assert proc_cpu.pace_lines([]) == ["host pace: no samples"]
    assert proc_cpu.pace_sample() > 0


def test_pace_runs_until_it_is_stopped_and_prints_on_sigterm() -> None:
    probe = subprocess.Popen([sys.executable, str(ROOT / "scripts/gpu/proc_cpu.py"), "pace"],
                             stdout=subprocess.PIPE, text=True)
    time.sleep(1.5)
    assert probe.poll() is None  # still sampling
    probe.terminate()
    out, _ = probe.communicate(timeout=10)
    assert probe.returncode == 0
    summary, by_second = out.splitlines()
    n = int(summary.split(" over ")[1].split()[0])
    assert n >= 5 and by_second.startswith("host pace by second: ")
