"""ProcessWatch on real child processes: the first to end is reported once, with how it ended,
through pidfd and through polling, and the child stays unreaped for its owner."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

import pytest

from turnspec.engine.process_watch import ProcessExit, ProcessWatch, exit_status, process_name


def spawn() -> subprocess.Popen[bytes]:
    """A child that says it is up (its /proc cmdline is set by then), then runs until its
    stdin closes and exits 0."""
    p = subprocess.Popen([sys.executable, "-c", "import sys; print('up', flush=True); "
                          "sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert p.stdout.readline() == b"up\n"
    return p

PIDFD = pytest.mark.parametrize("use_pidfd", [
    pytest.param(True, marks=pytest.mark.skipif(not hasattr(os, "pidfd_open"),
                                                reason="no pidfd on this platform")),
    False])


async def _first_exit(watch_pids: list[int], act, use_pidfd: bool) -> list[ProcessExit]:
    seen: list[ProcessExit] = []
    done = asyncio.Event()

    def on_exit(ex: ProcessExit) -> None:
        seen.append(ex)
        done.set()
    watch = ProcessWatch(watch_pids, on_exit, poll_s=0.01, use_pidfd=use_pidfd)
    watch.start()
    act()
    await asyncio.wait_for(done.wait(), 30)  # a hang guard, not a timing assertion
    await asyncio.sleep(0.05)  # a second report would land here
    watch.stop()
    return seen


@PIDFD
async def test_kill_9_is_reported_once_and_left_for_its_owner(use_pidfd: bool) -> None:
    a = spawn()
    b = spawn()
    try:
        assert exit_status(b.pid) is None
        seen = await _first_exit([a.pid, b.pid], lambda: os.kill(b.pid, signal.SIGKILL),
                                 use_pidfd)
        assert [(s.pid, s.how) for s in seen] == [(b.pid, "killed by SIGKILL")]
        assert "python" in seen[0].name and str(b.pid) in seen[0].describe()
        assert b.wait(10) == -signal.SIGKILL  # not reaped by the watch: Popen still gets it
        assert a.poll() is None
    finally:
        for p in (a, b):
            p.stdin.close()
            p.wait(10)
            p.stdout.close()


@PIDFD
async def test_a_clean_exit_counts_too(use_pidfd: bool) -> None:
    """SGLang's scheduler exits 0 after catching an exception: still a death to the server."""
    p = spawn()
    seen = await _first_exit([p.pid], p.stdin.close, use_pidfd)
    assert [s.how for s in seen] == ["exited with status 0"]
    assert p.wait(10) == 0
    p.stdout.close()


async def test_already_gone_and_stopped() -> None:
    p = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    p.wait(30)  # reaped: the pid is no longer ours
    seen: list[ProcessExit] = []
    ProcessWatch([p.pid], seen.append).start()
    assert [s.how for s in seen] == ["ended"]

    q = spawn()
    watch = ProcessWatch([q.pid], seen.append, poll_s=0.01)
    watch.start()
    watch.stop()
    q.stdin.close()
    q.wait(10)
    q.stdout.close()
    await asyncio.sleep(0.05)
    assert len(seen) == 1  # stopped: the exit went unreported


def test_bad_arguments_and_names() -> None:
    with pytest.raises(ValueError, match="at least one process"):
        ProcessWatch([], print)
    with pytest.raises(ValueError, match="poll_s"):
        ProcessWatch([1], print, poll_s=0)
    assert "python" in process_name(os.getpid())
    assert process_name(2 ** 22 + 1) == f"pid {2 ** 22 + 1}"
