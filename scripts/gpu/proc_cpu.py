"""The CPU time of a server's processes (its process group), to say which one is busy while a load
runs: SGLang's scheduler and detokenizer, and the process that holds its tokenizer manager
(turnspec's server, or SGLang's HTTP server).

    python3 scripts/gpu/proc_cpu.py snap PGID > BEFORE.json      # {pid: [title, cpu s]}
    python3 scripts/gpu/proc_cpu.py diff BEFORE.json PGID WALL_S  # the table since BEFORE
    python3 scripts/gpu/proc_cpu.py pace > PACE.txt &   # until SIGTERM: the host's pace

`diff` prints the host's line first (how busy all its cores were, and the share of time the
hypervisor gave to other guests, "steal", which slows a host-bound step without any process
here using more CPU), then each process's CPU seconds since the snapshot and that as a share of
one core over WALL_S (a process near 100% is the one the others wait on). Linux /proc only.

`pace` times one fixed piece of pure-Python work ten times a second until it is stopped, then
prints its median and p90 in µs and each second's median: where a window is slow because the
host's cores ran slower (a lower clock while other guests load the socket, which steal does not
show), its pace is slower too; a slow window at an even pace points elsewhere. It runs on
whichever core is idle, so a slowdown confined to one core (a busy SMT sibling) does not show.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import sys
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def title(pid: str) -> str:
    """What the process calls itself (SGLang sets `sglang::scheduler`), else its command."""
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    words = [a.decode(errors="replace") for a in argv if a]
    if words and words[0].startswith("sglang::"):
        return words[0]
    return " ".join(Path(words[0]).name.split() + words[1:3]) if words else pid


HOST = "host"  # snap's key for /proc/stat's all-cores line (a pid is all digits)


def host_ticks() -> list[int]:
    """/proc/stat's `cpu` line: user nice system idle iowait irq softirq steal (ticks)."""
    first = Path("/proc/stat").read_text().splitlines()[0].split()
    return [int(v) for v in first[1:9]]


def host_line(before: list[int], after: list[int]) -> str:
    d = [b - a for a, b in zip(before, after, strict=True)]
    total = sum(d) or 1
    busy = total - d[3] - d[4] - d[7]  # not idle, not waiting on I/O, not stolen
    return (f"host: {100 * busy / total:5.1f}% busy, {100 * d[7] / total:4.1f}% steal "
            f"over {os.cpu_count()} cores")


def snap(pgid: int) -> dict[str, list]:
    """pid -> [title, user + system CPU seconds] for every live process in the group, and
    HOST -> the host's ticks."""
    out: dict[str, list] = {HOST: host_ticks()}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:  # fields[2]: pgrp (stat field 5)
                continue
            out[entry.name] = [title(entry.name), (int(fields[11]) + int(fields[12])) / TICK]
        except (OSError, IndexError, ValueError):
            continue  # ended while read
    return out


def diff(before: dict[str, list], after: dict[str, list], wall_s: float) -> list[str]:
    procs = {pid: v for pid, v in after.items() if pid != HOST}
    rows = sorted(((cpu - before.get(pid, [None, 0.0])[1], name, pid)
                   for pid, (name, cpu) in procs.items()), reverse=True)
    host = [host_line(before[HOST], after[HOST])] if HOST in before and HOST in after else []
    return host + [f"{used:8.2f} s  {100 * used / wall_s:5.1f}% of a core  {name} (pid {pid})"
                   for used, name, pid in rows if used > 0.005]


PACE_WORK = 20_000  # additions a sample: ~0.5 ms of one core in CPython


def pace_sample() -> float:
    """µs one fixed pure-Python loop takes on this core now."""
    t0 = time.perf_counter_ns()
    x = 0
    for i in range(PACE_WORK):
        x += i
    return (time.perf_counter_ns() - t0) / 1000


def pace_lines(samples: list[tuple[float, float]]) -> list[str]:
    """(seconds since start, µs) samples -> the summary line and each second's median."""
    if not samples:
        return ["host pace: no samples"]
    us = sorted(v for _, v in samples)
    p90 = us[min(len(us) - 1, int(0.9 * len(us)))]
    by_second: dict[int, list[float]] = {}
    for t, v in samples:
        by_second.setdefault(int(t), []).append(v)
    seconds = " ".join(f"{statistics.median(v):.0f}" for _, v in sorted(by_second.items()))
    return [f"host pace: {statistics.median(us):.0f} us median, {p90:.0f} p90 over {len(us)} "
            f"samples of {PACE_WORK} additions", f"host pace by second: {seconds}"]


def pace(period_s: float = 0.1) -> list[str]:
    """Sample until SIGTERM or SIGINT; the lines to print."""
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(1))
    samples: list[tuple[float, float]] = []
    start = time.monotonic()
    while not stop:
        samples.append((time.monotonic() - start, pace_sample()))
        time.sleep(period_s)
    return pace_lines(samples)


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "snap":
        print(json.dumps(snap(int(argv[1]))))
        return 0
    if argv == ["pace"]:
        print("\n".join(pace()), flush=True)
        return 0
    if len(argv) == 4 and argv[0] == "diff":
        before = json.loads(Path(argv[1]).read_text())
        print("\n".join(diff(before, snap(int(argv[2])), float(argv[3]))))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
