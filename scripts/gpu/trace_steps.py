"""Where a speculative step's time goes, from a torch profiler trace SGLang wrote
(`/start_profile`, scripts/gpu/profile_step.sh): per scheduler step (`run_batch`), its wall
time, kernel launches, CUDA graph launches, copies and GPU-busy time; then the host time of the
plugin's functions and the GPU time of the busiest kernels over all steps.

usage: python3 scripts/gpu/trace_steps.py TRACE.json.gz [--top 12]
"""

from __future__ import annotations

import argparse
import gzip
import json
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from pathlib import Path

LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernelEx", "cudaLaunchKernelExC")
GPU = ("kernel", "gpu_memcpy", "gpu_memset")
OURS = ("turnspec/", "dflash_worker_v2.py", "dflash_info")


def events(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        doc = json.load(fh)
    return [e for e in doc.get("traceEvents", []) if e.get("ph") == "X" and "dur" in e]


def steps(evs: list[dict]) -> list[dict]:
    """One row per `run_batch`: wall ms, launches, graph launches, copies, GPU-busy ms (of the
    device work its host calls launched: correlated kernels, else those that ran within it)."""
    runtime = sorted((e for e in evs if e.get("cat") in ("cuda_runtime", "cuda_driver")),
                     key=lambda e: e["ts"])
    gpu = sorted((e for e in evs if e.get("cat") in GPU), key=lambda e: e["ts"])
    by_corr = defaultdict(list)
    for g in gpu:
        by_corr[(g.get("args") or {}).get("correlation")].append(g)
    rts = [e["ts"] for e in runtime]
    out = []
    for b in sorted((e for e in evs if e.get("cat") == "python_function"
                     and e["name"].endswith("run_batch")), key=lambda e: e["ts"]):
        lo, hi = bisect_left(rts, b["ts"]), bisect_right(rts, b["ts"] + b["dur"])
        calls = runtime[lo:hi]
        names = Counter(e["name"] for e in calls)
        busy = sum(g["dur"] for c in calls for g in by_corr.get((c.get("args") or {}).get(
            "correlation"), []))
        out.append({"wall_ms": b["dur"] / 1e3, "launches": sum(names[n] for n in LAUNCHES),
                    "graphs": names["cudaGraphLaunch"], "copies": names["cudaMemcpyAsync"],
                    "gpu_ms": busy / 1e3})
    return out


def totals(named: list[tuple[str, float]]) -> list[tuple[str, float, int]]:
    """(name, total ms, calls) of (name, duration us) pairs, longest first."""
    tot, calls = defaultdict(float), Counter()
    for name, dur in named:
        tot[name] += dur / 1e3
        calls[name] += 1
    return sorted(((n, t, calls[n]) for n, t in tot.items()), key=lambda x: -x[1])


def host_time(evs: list[dict]) -> list[tuple[str, float, int]]:
    """(function, total ms, calls) of the plugin's and DFLASH's Python functions, longest first."""
    return totals([(e["name"], e["dur"]) for e in evs if e.get("cat") == "python_function"
                   and any(k in e["name"] for k in OURS)])


def kernels(evs: list[dict]) -> list[tuple[str, float, int]]:
    """(kernel name, its first 80 characters; total ms, launches) over the trace, longest first."""
    return totals([(e["name"][:80], e["dur"]) for e in evs if e.get("cat") == "kernel"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace", type=Path)
    p.add_argument("--top", type=int, default=12)
    args = p.parse_args()
    evs = events(args.trace)
    rows = steps(evs)
    print(f"{'step':>4} {'wall ms':>8} {'launches':>8} {'graphs':>6} {'copies':>6} {'gpu ms':>7}")
    for i, r in enumerate(rows):
        print(f"{i:>4} {r['wall_ms']:>8.2f} {r['launches']:>8} {r['graphs']:>6} {r['copies']:>6} "
              f"{r['gpu_ms']:>7.2f}")
    print("host (profiled: Python tracing inflates it), ms over the trace:")
    for name, ms, n in host_time(evs)[: args.top]:
        print(f"  {ms:8.2f} {n:5d}  {name[-100:]}")
    print("GPU kernels, ms over the trace:")
    for name, ms, n in kernels(evs)[: args.top]:
        print(f"  {ms:8.2f} {n:5d}  {name}")


if __name__ == "__main__":
    main()
