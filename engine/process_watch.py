"""Watch processes from an asyncio loop: the first one to end is reported, once.

SGLang runs its scheduler and detokenizer in child processes; when one dies, requests waiting
on it would wait forever (its IPC gives no end-of-stream). On Linux each watched process gets a
pidfd (`os.pidfd_open`, kernel >= 5.3) in the loop's selector: it turns readable when the
process ends, so the exit is seen at once, without polling. Elsewhere (or where pidfd is
refused) the processes are polled every `poll_s`. Either way a child is never reaped here
(`waitid(..., WNOWAIT)`), so its owner (multiprocessing, subprocess) still collects its status.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(slots=True, frozen=True)
class ProcessExit:
    pid: int
    name: str  # its command line when the watch began, e.g. "sglang::scheduler_TP0"
    how: str  # "killed by SIGKILL", "exited with status 0", or "ended" (not our child)

    def describe(self) -> str:
        return f"{self.name} (pid {self.pid}) {self.how}"


def process_name(pid: int) -> str:
    """What /proc says the process is (SGLang titles its processes `sglang::scheduler...`,
    `sglang::detokenizer`); `pid N` where /proc is not there."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return f"pid {pid}"
    words = [Path(a.decode(errors="replace")).name for a in argv[:2] if a]
    return " ".join(words) or f"pid {pid}"


def exit_status(pid: int) -> str | None:
    """How the process ended ("killed by SIGKILL", "exited with status 1"), "ended" when it is
    gone but not our child, None while it runs. Leaves a child unreaped."""
    try:
        res = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:  # not our child (or already reaped by its owner)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return "ended"
        return None
    if res is None:
        return None
    if res.si_code in (os.CLD_KILLED, os.CLD_DUMPED):
        try:
            return f"killed by {signal.Signals(res.si_status).name}"
        except ValueError:
            return f"killed by signal {res.si_status}"
    return f"exited with status {res.si_status}"


class ProcessWatch:
    """Calls `on_exit(ProcessExit)` once, on the loop that ran `start()`, when the first of
    `pids` ends. `use_pidfd=None` picks pidfd where the platform has it."""

    def __init__(self, pids: Iterable[int], on_exit: Callable[[ProcessExit], None], *,
                 poll_s: float = 0.05, use_pidfd: bool | None = None) -> None:
        self.pids = tuple(pids)
        if not self.pids:
            raise ValueError("pids: expected at least one process to watch")
        if poll_s <= 0:
            raise ValueError(f"poll_s: expected > 0 seconds, got {poll_s}")
        self._on_exit = on_exit
        self._poll_s = poll_s
        self._use_pidfd = hasattr(os, "pidfd_open") if use_pidfd is None else use_pidfd
        self._names: dict[int, str] = {}
        self._fds: dict[int, int] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.fired: ProcessExit | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._names = {pid: process_name(pid) for pid in self.pids}
        polled = []
        for pid in self.pids:
            try:
                if not self._use_pidfd:
                    raise OSError("pidfd not used")
                fd = os.pidfd_open(pid)
            except ProcessLookupError:  # already gone
                self._report(pid)
                return
            except OSError:  # no pidfd here (old kernel, seccomp): poll this one
                polled.append(pid)
                continue
            self._fds[pid] = fd
            self._loop.add_reader(fd, self._report, pid)
        if polled:
            self._poll(tuple(polled))

    def _poll(self, pids: tuple[int, ...]) -> None:
        for pid in pids:
            if exit_status(pid) is not None:
                self._report(pid)
                return
        assert self._loop is not None
        self._timer = self._loop.call_later(self._poll_s, self._poll, pids)

    def _report(self, pid: int) -> None:
        if self.fired is not None:
            return
        self.fired = ProcessExit(pid, self._names.get(pid, f"pid {pid}"),
                                 exit_status(pid) or "ended")
        self.stop()
        self._on_exit(self.fired)

    def stop(self) -> None:
        """Stop watching (idempotent): before a shutdown that ends the processes on purpose."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for fd in self._fds.values():
            if self._loop is not None and not self._loop.is_closed():
                self._loop.remove_reader(fd)
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()
