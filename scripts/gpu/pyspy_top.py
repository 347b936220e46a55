"""Summarise `pyspy_servers.sh`'s collapsed stacks: per process (and thread), its busy seconds,
and the functions holding most of them (self and inclusive).

    python3 scripts/gpu/pyspy_top.py pyspy-ts-trees.txt [--rate 200] [--top 15]

A line of `py-spy record --format raw --subprocesses --threads` is a stack, root first, frames
split by ';', then its sample count. Its root frames name the process chain
(`process PID:"CMDLINE"`) and the thread (`thread (0x...)`); the rest are `func (file:line)`.
Idle samples are not recorded, so busy seconds = samples / rate.
"""

from __future__ import annotations

import argparse
import collections
import re
from pathlib import Path

_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::\d+)?\)$")


def parse(path: Path) -> dict[str, collections.Counter[tuple[str, ...]]]:
    """{process-and-thread label: Counter(stack of 'func (file)' frames -> samples)}."""
    out: dict[str, collections.Counter[tuple[str, ...]]] = collections.defaultdict(
        collections.Counter)
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")  # a command line may hold ';' too: find the thread frame
        at = max((i for i, f in enumerate(frames) if f.startswith("thread (")), default=-1)
        procs = re.findall(r'process (\d+):"([^"]*)"', ";".join(frames[:at + 1]))
        if not procs:  # no thread frame (recorded without --threads) or no process frame
            continue
        pid, cmd = procs[-1]
        label = f"{pid} {' '.join(cmd.split()[:4])[:70]} {frames[at]}"
        code = []
        for f in frames[at + 1:]:
            m = _FRAME.match(f)
            code.append(f"{m['func']} ({Path(m['file']).name})" if m else f)
        out[label][tuple(code)] += int(count)
    return out


def report(path: Path, rate: float, top: int) -> str:
    lines = [f"== {path.name} (busy s = samples / {rate:g} Hz)"]
    per = parse(path)
    for label, stacks in sorted(per.items(), key=lambda kv: -sum(kv[1].values())):
        total = sum(stacks.values())
        if total / rate < 0.2:
            continue
        lines.append(f"-- {label}: {total / rate:.1f} busy s")
        own: collections.Counter[str] = collections.Counter()
        incl: collections.Counter[str] = collections.Counter()
        for stack, n in stacks.items():
            if stack:
                own[stack[-1]] += n
            for f in set(stack):
                incl[f] += n
        lines.append("   self: " + "; ".join(f"{f} {100 * n / total:.0f}%"
                                              for f, n in own.most_common(top)))
        lines.append("   incl: " + "; ".join(f"{f} {100 * n / total:.0f}%"
                                              for f, n in incl.most_common(top)))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--rate", type=float, default=200.0, help="py-spy's --rate (Hz)")
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args()
    for f in a.files:
        print(report(f, a.rate, a.top))


if __name__ == "__main__":
    main()
