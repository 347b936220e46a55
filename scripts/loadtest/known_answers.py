"""Known answers: `turnspec loadtest` against `turnspec serve --engine fake-fixed-rate` (first
token at D1, then one every D2) at several open-loop rates on every transport; TTFT p50 must be
within 5% of D1 and ITL p50 within 5% of D2. Then one run with the client starved on purpose
(`--burn-loop-ms`), where the saturation report must fire.

    python scripts/loadtest/known_answers.py --rates 1,10,100 --duration 20 --out out/known.json
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BOUND = 0.05


def start_fake(args: argparse.Namespace) -> tuple[subprocess.Popen, int, int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "turnspec.cli.main", "--log-level", "warning", "serve", "--engine",
         "fake-fixed-rate", "--port", "0", "--grpc-port", "0", "--max-running", "1024",
         "--max-queue", "1024", "--fake-first-token-ms", str(args.d1), "--fake-interval-ms",
         str(args.d2), "--fake-tokens", str(args.tokens)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    ports = None
    for line in proc.stdout:
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+) .* gRPC 127\.0\.0\.1:(\d+)", line)
        ports = (int(m[1]), int(m[2])) if m else ports
        if "turnspec: ready" in line and ports:
            return proc, *ports
    raise RuntimeError(f"fake serve exited with {proc.wait()}")


def loadtest(url: str, out: Path, extra: list[str]) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "turnspec.cli.main", "loadtest", "--url", url, "--out", str(out),
           "--history", "", "--no-progress", *extra]
    print("$ " + " ".join(cmd), flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True)
    print(done.stdout, flush=True)
    return json.loads(out.read_text())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--d1", type=float, default=200.0, help="first-token delay, ms")
    p.add_argument("--d2", type=float, default=50.0, help="per-token delay, ms")
    p.add_argument("--tokens", type=int, default=16)
    p.add_argument("--rates", default="1,10,100")
    p.add_argument("--transports", default="ws,http,grpc")
    p.add_argument("--duration", type=float, default=20.0)
    p.add_argument("--work", default="out/known-answers")
    p.add_argument("--out", default="out/known-answers/known.json")
    args = p.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    proc, port, grpc_port = start_fake(args)
    urls = {"ws": f"ws://127.0.0.1:{port}/v1/responses", "http": f"http://127.0.0.1:{port}/v1",
            "grpc": f"grpc://127.0.0.1:{grpc_port}"}
    rows = []
    try:
        for rate in args.rates.split(","):
            for t in args.transports.split(","):
                res = loadtest(urls[t], work / f"{t}-{rate}.json",
                               ["--rate", rate, "--duration", str(args.duration), "--warmup", "4",
                                "--workload", f"synthetic:32,{args.tokens + 4}"])
                m, sat = res["metrics"], res["saturation"]
                rows.append({"transport": t, "rate": float(rate), "turns": res["requests"]["ok"],
                             "errors": res["requests"]["errors"],
                             "ttft_p50_ms": m["ttft_ms"]["p50"], "itl_p50_ms": m["itl_ms"]["p50"],
                             "ttft_err": m["ttft_ms"]["p50"] / args.d1 - 1,
                             "itl_err": m["itl_ms"]["p50"] / args.d2 - 1,
                             "loop_lag_p99_ms": sat["loop_lag_ms"]["p99"],
                             "arrival_lag_p99_ms": sat["arrival_lag_ms"]["p99"],
                             "client_bound": sat["client_bound"]})
        starved = loadtest(urls["http"], work / "starved.json",
                           ["--rate", "10", "--duration", "5", "--workload",
                            f"synthetic:32,{args.tokens + 4}", "--burn-loop-ms", "50"])
    finally:
        proc.terminate()
        proc.wait(30)
    print(f"fake engine: D1 {args.d1:g} ms, D2 {args.d2:g} ms, {args.tokens} tokens; bound "
          f"{BOUND:.0%}")
    print(f"{'transport':<10}{'rate/s':>7}{'turns':>7}{'TTFT p50':>10}{'vs D1':>8}"
          f"{'ITL p50':>9}{'vs D2':>8}{'loop lag p99':>13}{'arrival p99':>12}  within 5%")
    for r in rows:
        ok = abs(r["ttft_err"]) <= BOUND and abs(r["itl_err"]) <= BOUND and not r["errors"]
        r["within_bound"] = ok
        print(f"{r['transport']:<10}{r['rate']:>7g}{r['turns']:>7}{r['ttft_p50_ms']:>10.2f}"
              f"{r['ttft_err']:>+8.1%}{r['itl_p50_ms']:>9.2f}{r['itl_err']:>+8.1%}"
              f"{r['loop_lag_p99_ms']:>13.2f}{r['arrival_lag_p99_ms'] or 0:>12.2f}  "
              f"{'yes' if ok else 'NO'}{'  client-bound' if r['client_bound'] else ''}")
    sat = starved["saturation"]
    print(f"starved client (--burn-loop-ms 50): client_bound={sat['client_bound']}: "
          f"{'; '.join(sat['reasons'])}; {sat['cause']}")
    record = {"date": time.strftime("%Y-%m-%d"), "config": vars(args), "rows": rows,
              "starved": sat}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    return 0 if all(r["within_bound"] for r in rows) and sat["client_bound"] else 1


if __name__ == "__main__":
    sys.exit(main())
