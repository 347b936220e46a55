"""Peer agreement: `turnspec loadtest` and AIPerf against the same `turnspec serve` HTTP endpoint,
the same prompts (seeded synthetic prompts of IN tokens, written once in both tools' file
formats), the same max output tokens, concurrency and request count. Prints both tools' tables
and TTFT / ITL p50 and p90 side by side, and writes everything to one JSON.

    python scripts/loadtest/aiperf_compare.py --aiperf AIPERF_VENV/bin/aiperf \
        --input-tokens 128 --output-tokens 64 --concurrency 4 --requests 60 --out out/aiperf.json

AIPerf lives in its own venv (its pins clash with the project's): `python -m venv AIPERF_VENV &&
AIPERF_VENV/bin/pip install aiperf==0.13.0` (the version compared in docs/benchmarks.md). Metric pairs, by definition:
TTFT = TTFT; AIPerf's `inter_token_latency` is per request (E2E - TTFT) / (tokens - 1), our
`tpot_ms`; AIPerf's `inter_chunk_latency` is every gap between content chunks, our `itl_ms`.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from itertools import islice
from pathlib import Path
from typing import Any

from turnspec.loadtest.stats import percentile

PAIRS = (("TTFT", "time_to_first_token", "ttft_ms"),
         ("ITL per chunk gap", "inter_chunk_latency", "itl_ms"),
         ("ITL per request (TPOT)", "inter_token_latency", "tpot_ms"))
AGREE = 0.10  # the bound


def write_prompts(folder: Path, model_dir: str, n_in: int, n_out: int, count: int,
                  seed: int) -> tuple[Path, Path]:
    """Both tools' prompt files: the same seeded texts, in the same order (each tool gets a
    fresh server, so neither finds the other's prompts in the prefix cache)."""
    from turnspec.loadtest.workload import load_tokenizer, synthetic_scripts

    tok = load_tokenizer(model_dir)

    def texts(s: int) -> list[str]:
        return [x.turns[0].history[0]["content"]
                for x in islice(synthetic_scripts(tok, n_in, n_out, s), count)]

    ours, theirs = folder / "prompts.turnspec.jsonl", folder / "prompts.aiperf.jsonl"
    ours.write_text("".join(json.dumps({"id": f"p{i:04d}", "max_tokens": n_out, "messages": [
        {"role": "user", "content": t}]}) + "\n" for i, t in enumerate(texts(seed))))
    theirs.write_text("".join(json.dumps({"text": t, "output_length": n_out}) + "\n"
                              for t in texts(seed)))
    return ours, theirs


class ServerLog:
    """The server's per-request log lines (`http req_… ttft_ms=… e2e_ms=…`), timestamped as
    read, so each tool's window can be summarised from the server's own clock."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.lines: list[tuple[float, str]] = []
        assert proc.stdout is not None
        self._thread = threading.Thread(target=self._read, args=(proc.stdout,), daemon=True)
        self._thread.start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            self.lines.append((time.monotonic(), line))

    def server_view(self, t0: float, t1: float, skip: int) -> dict[str, Any]:
        """Server TTFT and E2E (ms) of the requests logged in [t0, t1], the first `skip`
        (the tool's warmup) left out."""
        vals = [(float(m[1]), float(m[2])) for t, line in self.lines if t0 <= t <= t1
                for m in [re.search(r" http \S+ \S+ .*ttft_ms=([\d.]+) e2e_ms=([\d.]+)", line)]
                if m][skip:]
        out: dict[str, Any] = {"requests": len(vals)}
        for i, name in enumerate(("server_ttft_ms", "server_e2e_ms")):
            xs = [v[i] for v in vals]
            out[name] = {q: percentile(xs, int(q[1:])) if xs else None for q in ("p50", "p90")}
        return out


def pinned(cpus: str | None) -> list[str]:
    """A command prefix that keeps a process on these CPUs (`taskset -c`), or nothing."""
    return ["taskset", "-c", cpus] if cpus else []


def start_server(model_dir: str, cpus: str | None) -> tuple[subprocess.Popen, int, ServerLog]:
    threads = ["--threads", str(len(cpus.split(",")))] if cpus else []
    proc = subprocess.Popen([*pinned(cpus), sys.executable, "-m", "turnspec.cli.main",
                             "--log-level", "info", "serve", "--model", model_dir, "--port", "0",
                             "--grpc-port", "-1", *threads],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log = ServerLog(proc)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        text = "".join(line for _, line in log.lines)
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", text)
        if m and "turnspec: ready" in text:
            return proc, int(m[1]), log
        time.sleep(0.5)
    text = "".join(line for _, line in log.lines)
    raise RuntimeError(f"turnspec serve was not ready: {text[-2000:]}")


def timed_run(cmd: list[str], timeout: float) -> tuple[subprocess.CompletedProcess, float, float,
                                                       float]:
    """(result, start, end, the tool's CPU seconds: its processes' user + system time)."""
    print("$ " + " ".join(cmd), flush=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    t1 = time.monotonic()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done, t0, t1, cpu


def run_aiperf(args: argparse.Namespace, url: str, model: str, prompts: Path,
               folder: Path) -> tuple[dict[str, Any], str]:
    artifacts = folder / "aiperf"
    cmd = [*pinned(args.client_cpus), args.aiperf, "profile", "--model", model, "--url", url, "--endpoint-type", "chat",
           "--streaming", "--concurrency", str(args.concurrency), "--request-count",
           str(args.requests), "--warmup-request-count", str(args.warmup), "--input-file",
           str(prompts), "--custom-dataset-type", "single_turn",
           "--dataset-sampling-strategy", "sequential", "--tokenizer", args.model_dir,
           "--use-server-token-count", "--extra-inputs", "temperature:0", "--random-seed",
           str(args.seed), "--output-artifact-dir", str(artifacts), "--ui-type", "simple",
           "--workers-max", "2", "--no-gpu-telemetry", "--no-server-metrics"]
    done, t0, t1, cpu = timed_run(cmd, args.timeout)
    if done.returncode != 0:
        raise RuntimeError(f"aiperf failed ({done.returncode}):\n{done.stdout[-3000:]}\n"
                           f"{done.stderr[-3000:]}")
    found = sorted(artifacts.rglob("profile_export_aiperf.json"))
    if not found:
        raise RuntimeError(f"aiperf wrote no profile_export_aiperf.json under {artifacts}")
    return {"export": json.loads(found[-1].read_text()), "stdout": done.stdout,
            "window": (t0, t1), "cpu_s": cpu}


def run_ours(args: argparse.Namespace, url: str, prompts: Path,
             folder: Path) -> tuple[dict[str, Any], str]:
    out = folder / "turnspec.json"
    cmd = [*pinned(args.client_cpus), sys.executable, "-m", "turnspec.cli.main", "loadtest", "--url", url, "--concurrency",
           str(args.concurrency), "--requests", str(args.requests), "--warmup",
           str(args.warmup), "--workload", str(prompts), "--out", str(out), "--history", "",
           "--no-progress", "--seed", str(args.seed)]
    done, t0, t1, cpu = timed_run(cmd, args.timeout)
    if not out.exists():
        raise RuntimeError(f"turnspec loadtest wrote no JSON:\n{done.stdout}\n{done.stderr}")
    return {"result": json.loads(out.read_text()), "stdout": done.stdout, "window": (t0, t1),
            "cpu_s": cpu}


def aiperf_stat(export: dict[str, Any], tag: str, stat: str) -> float | None:
    block = export.get(tag) or {}
    return block.get(stat)


def comparison(export: dict[str, Any], ours: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for label, tag, key in PAIRS:
        for stat in ("p50", "p90"):
            a, b = aiperf_stat(export, tag, stat), ours["metrics"][key][stat]
            diff = None if a is None or b is None or not a else (b - a) / a
            rows.append({"metric": label, "stat": stat, "aiperf_ms": a, "turnspec_ms": b,
                         "diff": diff, "agree": diff is not None and abs(diff) <= AGREE})
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--aiperf", default="aiperf",
                   help="AIPerf's executable (default: aiperf on PATH; its own venv's bin/aiperf)")
    p.add_argument("--url", help="an already running server's http://HOST:PORT (default: "
                   "start turnspec serve with the real model)")
    p.add_argument("--model-dir", default=None, help="model folder (default: SmolLM2)")
    p.add_argument("--input-tokens", type=int, default=128)
    p.add_argument("--output-tokens", type=int, default=64)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--requests", type=int, default=60)
    p.add_argument("--warmup", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--order", default="aiperf,turnspec", help="which tool runs first")
    p.add_argument("--pin", default=None, metavar="SERVER:CLIENT",
                   help="CPU lists, e.g. 0:1: the server (with that many torch threads) and each "
                   "tool on their own CPUs, so a tool's own CPU use cannot slow the server")
    p.add_argument("--work", default="out/aiperf-compare")
    p.add_argument("--out", default="out/aiperf-compare/compare.json")
    args = p.parse_args()
    if shutil.which(args.aiperf) is None:
        raise SystemExit(f"--aiperf {args.aiperf}: no such executable; expected AIPerf's, e.g. "
                         "its own venv's bin/aiperf (this file's docstring says how to make it)")
    if args.model_dir is None:
        from turnspec.engine.model.prepare import prepare_default_model

        args.model_dir = str(prepare_default_model())
    folder = Path(args.work)
    folder.mkdir(parents=True, exist_ok=True)
    # the warmup turns come first in both tools: the prompts cover them and the measured ones
    ours_prompts, aiperf_prompts = write_prompts(folder, args.model_dir, args.input_tokens,
                                                 args.output_tokens,
                                                 args.requests + args.warmup, args.seed)
    args.server_cpus, args.client_cpus = args.pin.split(":") if args.pin else (None, None)
    runs: dict[str, Any] = {}
    for tool in args.order.split(","):
        proc, log, url = None, None, args.url
        if url is None:  # a fresh server per tool: same state, empty prefix cache
            proc, port, log = start_server(args.model_dir, args.server_cpus)
            url = f"http://127.0.0.1:{port}"
        try:
            with urllib.request.urlopen(f"{url}/v1/models", timeout=30) as resp:
                model = json.load(resp)["data"][0]["id"]
            if tool == "aiperf":
                runs[tool] = run_aiperf(args, url, model, aiperf_prompts, folder)
            else:
                runs[tool] = run_ours(args, f"{url}/v1", ours_prompts, folder)
            if log is not None:  # the server's own view of this tool's requests
                runs[tool]["server"] = log.server_view(*runs[tool]["window"], args.warmup)
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(60)
    export, ours = runs["aiperf"]["export"], runs["turnspec"]["result"]
    print("\n== AIPerf ==\n" + runs["aiperf"]["stdout"][-6000:])
    print("\n== turnspec loadtest ==\n" + runs["turnspec"]["stdout"])
    rows = comparison(export, ours)
    print(f"\n{'metric':<24}{'stat':>5}{'AIPerf ms':>11}{'turnspec ms':>13}{'diff':>8}  within 10%")
    for r in rows:
        diff = "-" if r["diff"] is None else f"{r['diff']:+.1%}"
        print(f"{r['metric']:<24}{r['stat']:>5}{r['aiperf_ms'] or float('nan'):>11.2f}"
              f"{r['turnspec_ms'] or float('nan'):>13.2f}{diff:>8}  {'yes' if r['agree'] else 'NO'}")
    for tool in ("aiperf", "turnspec"):
        run = runs[tool]
        wall = run["window"][1] - run["window"][0]
        line = f"{tool}: {wall:.1f} s wall, client CPU {run['cpu_s']:.1f} s"
        if "server" in run:
            v = run["server"]
            line += (f"; the server saw {v['requests']} requests, server TTFT p50 "
                     f"{v['server_ttft_ms']['p50']:.1f} p90 {v['server_ttft_ms']['p90']:.1f} ms")
        print(line)
    record = {"date": time.strftime("%Y-%m-%d"), "config": vars(args), "comparison": rows,
              "aiperf": {tag: export.get(tag) for _, tag, _ in PAIRS}
              | {k: export.get(k) for k in ("request_count", "request_throughput",
                                            "output_token_throughput", "request_latency",
                                            "output_sequence_length", "error_request_count")},
              "turnspec": {k: ours[k] for k in ("requests", "throughput", "metrics",
                                                "saturation")},
              "runs": {t: {"wall_s": r["window"][1] - r["window"][0], "client_cpu_s": r["cpu_s"],
                           "server_view": r.get("server")} for t, r in runs.items()}}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0 if all(r["agree"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
