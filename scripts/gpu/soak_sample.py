"""Samples a running `turnspec serve` for the SGLang soak (scripts/gpu/reliability_sglang.sh):
every --interval seconds its GPU memory (nvidia-smi, the whole device), host RSS (the server
and every process under it: SGLang's scheduler and detokenizer), open fds (the server), and
SGLang's figures from /metrics, one JSON line each; with --summary, the growth after warm-up.
Standard library only, so it runs beside the carried wheels.

    python3 scripts/gpu/soak_sample.py --pid PID --port PORT --seconds 720 --out soak.jsonl
    python3 scripts/gpu/soak_sample.py --summary soak.jsonl --warmup-s 120 > soak.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request

GAUGES = ("turnspec_engine_active_sequences", "turnspec_engine_waiting_sequences",
          "turnspec_engine_used_kv_blocks", "turnspec_running_turns", "turnspec_ws_connections")


def tree(pid: int) -> list[int]:
    """`pid` and every process under it (from /proc/PID/task/*/children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            continue
    return out


def rss_mb(pids: list[int]) -> float:
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            continue
    return round(total / 1024, 1)


def gpu_mb() -> float | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,"
                              "nounits"], capture_output=True, text=True, timeout=10).stdout
        return float(out.split()[0])
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None


def metrics(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        lines = r.read().decode().splitlines()
    vals = dict(line.split(" ", 1) for line in lines if line and not line.startswith("#")
                and "{" not in line)
    return {k: float(vals[k]) for k in GAUGES if k in vals}


def sample(pid: int, port: int, t0: float) -> dict:
    s = {"t_s": round(time.monotonic() - t0, 1), "gpu_mb": gpu_mb(),
         "rss_mb": rss_mb(tree(pid)), "fds": len(os.listdir(f"/proc/{pid}/fd"))}
    try:
        s.update(metrics(port))
    except OSError as e:
        s["metrics_error"] = str(e)
    return s


def summary(path: str, warmup_s: float) -> dict:
    with open(path) as f:
        rows = [json.loads(line) for line in f]
    warm = [r for r in rows if r["t_s"] >= warmup_s] or rows
    out = {"samples": len(rows), "seconds": rows[-1]["t_s"] if rows else 0,
           "warmup_s": warmup_s}
    for k in ("gpu_mb", "rss_mb", "fds"):
        vals = [r[k] for r in warm if r.get(k) is not None]
        if vals:
            out[k] = {"after_warmup": vals[0], "end": vals[-1], "max": max(vals),
                      "growth": round(vals[-1] - vals[0], 1)}
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pid", type=int)
    p.add_argument("--port", type=int)
    p.add_argument("--seconds", type=float, default=720.0)
    p.add_argument("--interval", type=float, default=10.0)
    p.add_argument("--out")
    p.add_argument("--summary", metavar="JSONL")
    p.add_argument("--warmup-s", type=float, default=120.0)
    a = p.parse_args()
    if a.summary:
        json.dump(summary(a.summary, a.warmup_s), sys.stdout, indent=1)
        return 0
    if a.pid is None or a.port is None or a.out is None:
        p.error("--pid, --port and --out are needed to sample")
    t0 = time.monotonic()
    with open(a.out, "a") as f:
        while time.monotonic() - t0 < a.seconds and os.path.exists(f"/proc/{a.pid}"):
            f.write(json.dumps(sample(a.pid, a.port, t0)) + "\n")
            f.flush()
            time.sleep(a.interval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
