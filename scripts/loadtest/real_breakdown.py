"""The real-model acceptance run: `turnspec serve` (SmolLM2 + its drafter on CPU, a fresh
process per transport so no run finds another's prompts cached) and `turnspec loadtest` with the
voice workload at concurrency 4 for 20 s on WS, HTTP and gRPC; prints each table and, per
transport, the p90 breakdown (RTT + server parts) against the client's E2E.

    python scripts/loadtest/real_breakdown.py --duration 20 --out out/real/summary.json
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import subprocess
import sys
import time
from pathlib import Path

PARTS = ("rtt_ms", "host_overhead_ms", "queue_ms", "prefill_ms", "decode_ms")


def pinned(cpus: str | None) -> list[str]:
    return ["taskset", "-c", cpus] if cpus else []


def start_serve(extra: list[str], cpus: str | None) -> tuple[subprocess.Popen, int, int]:
    threads = ["--threads", str(len(cpus.split(",")))] if cpus else []
    proc = subprocess.Popen([*pinned(cpus), sys.executable, "-m", "turnspec.cli.main",
                             "--log-level", "warning", "serve", "--port", "0", "--grpc-port", "0",
                             *threads, *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    ports = None
    for line in proc.stdout:
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+) .* gRPC 127\.0\.0\.1:(\d+)", line)
        ports = (int(m[1]), int(m[2])) if m else ports
        if "turnspec: ready" in line and ports:
            return proc, *ports
    raise RuntimeError(f"turnspec serve exited with {proc.wait()}")


def abs_residual_p90(details_csv: Path) -> float | None:
    """p90 over turns of |E2E - (RTT + server parts)|, from `loadtest --details`."""
    from turnspec.loadtest.stats import percentile

    with details_csv.open() as f:
        vals = [abs(float(r["residual_ms"])) for r in csv.DictReader(f) if r["residual_ms"]]
    return percentile(vals, 90) if vals else None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--transports", default="ws,http,grpc")
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--duration", type=float, default=20.0)
    p.add_argument("--warmup", type=int, default=4)
    p.add_argument("--serve-args", default="", help="extra `turnspec serve` flags")
    p.add_argument("--loadtest-args", default="", help="extra `turnspec loadtest` flags")
    p.add_argument("--pin", default=None, metavar="SERVER:CLIENT",
                   help="CPU lists, e.g. 0:1: serve (that many torch threads) and the load test on "
                   "their own CPUs (default: unpinned, sharing every core)")
    p.add_argument("--work", default="out/real")
    p.add_argument("--out", default="out/real/summary.json")
    args = p.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    server_cpus, client_cpus = args.pin.split(":") if args.pin else (None, None)
    summary = []
    for t in args.transports.split(","):
        proc, port, grpc_port = start_serve(args.serve_args.split(), server_cpus)
        url = {"ws": f"ws://127.0.0.1:{port}/v1/responses", "http": f"http://127.0.0.1:{port}/v1",
               "grpc": f"grpc://127.0.0.1:{grpc_port}"}[t]
        out = work / f"{t}.json"
        cmd = [*pinned(client_cpus), sys.executable, "-m", "turnspec.cli.main", "loadtest",
               "--url", url,
               "--concurrency", str(args.concurrency), "--duration", str(args.duration),
               "--warmup", str(args.warmup), "--out", str(out), "--history", "",
               "--no-progress", "--details", str(work / f"{t}.csv"), "--plot",
               str(work / f"plots-{t}"), *args.loadtest_args.split()]
        print("$ " + " ".join(cmd), flush=True)
        try:
            done = subprocess.run(cmd, capture_output=True, text=True)
        finally:
            proc.terminate()
            proc.wait(60)
        print(done.stdout, flush=True)
        res = json.loads(out.read_text())
        row = res["breakdown"]["p90"]
        summary.append({"transport": t, "turns": res["requests"]["ok"],
                        "errors": res["requests"]["errors"], "e2e_p90_row_ms": row["e2e_ms"],
                        "parts_sum_ms": sum(row[k] for k in PARTS),
                        "residual_p90_row_ms": row["residual_ms"],
                        "residual_turn_p90_ms": res["metrics"]["residual_ms"]["p90"],
                        "abs_residual_turn_p90_ms": abs_residual_p90(work / f"{t}.csv"),
                        "client_bound": res["saturation"]["client_bound"]})
    print(f"{'transport':<10}{'turns':>6}{'p90 E2E':>11}{'RTT+server':>12}{'residual':>10}"
          f"{'per-turn residual p90':>23}{'|per-turn| p90':>16}")
    for s in summary:
        print(f"{s['transport']:<10}{s['turns']:>6}{s['e2e_p90_row_ms']:>11.2f}"
              f"{s['parts_sum_ms']:>12.2f}{s['residual_p90_row_ms']:>+10.2f}"
              f"{s['residual_turn_p90_ms']:>+23.2f}{s['abs_residual_turn_p90_ms']:>16.2f}")
    Path(args.out).write_text(json.dumps({"date": time.strftime("%Y-%m-%d"),
                                          "config": vars(args), "summary": summary}, indent=1))
    return 0 if all(abs(s["residual_p90_row_ms"]) <= 1.0 for s in summary) else 1


if __name__ == "__main__":
    sys.exit(main())
