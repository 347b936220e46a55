"""Where a process's CPU time goes, by thread (Linux /proc), for datagen's last line.

Datagen shards each kept ~2.3 of the H200 host's 16 cores busy while they decoded
(`host-top.txt`), six of them 85% of the host, and rebuilds beside them cut each shard's tok/s
by a quarter: the host's CPU bounds datagen (docs/history/notes/run18-lower-lr.md,
docs/history/notes/run15-goal-dose.md). A datagen shard steps its engine on
the main thread (`LocalEngine.generate_stream`), which can use one core; this says what the
other threads (torch's intra-op pool, the CUDA driver's, the tokenizer's) do with the rest: a
pool of similar busy threads reads as spinning workers, one busy thread as a driver's.
"""

from __future__ import annotations

import os
from pathlib import Path

_TASKS = Path("/proc/self/task")


def thread_cpu_seconds() -> dict[int, float]:
    """User + system CPU seconds of each live thread of this process, by native thread id.
    Empty where /proc is not there (not Linux)."""
    out: dict[int, float] = {}
    if not _TASKS.is_dir():
        return out
    tick = os.sysconf("SC_CLK_TCK")
    for task in _TASKS.iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:  # the thread ended between the listing and the read
            continue
        # after the ")" that closes the command name: field 3 (state) first, utime and stime
        # are fields 14 and 15 of proc(5)
        fields = stat[stat.rindex(")") + 2:].split()
        out[int(task.name)] = (int(fields[11]) + int(fields[12])) / tick
    return out


def other_threads_cpu(before: dict[int, float], after: dict[int, float], exclude: set[int],
                      top: int = 4) -> dict[str, object]:
    """CPU seconds that threads other than `exclude` spent between two `thread_cpu_seconds()`
    readings: their sum, how many used any, and the `top` largest (seconds, descending). A
    thread that ended in between is missing (its time left /proc with it)."""
    if top < 0:
        raise ValueError(f"top: expected >= 0, got {top}")
    spent = sorted((cpu - before.get(tid, 0.0) for tid, cpu in after.items() if tid not in exclude),
                   reverse=True)
    used = [s for s in spent if s > 0]
    return {"other_threads_cpu_s": round(sum(used), 2), "other_threads_busy": len(used),
            "other_threads_top_s": [round(s, 2) for s in used[:top]]}
