"""`turnspec bench frontend --tool-sets N`: what a never-seen tool set costs its first turn.

N tool sets of three functions each, never seen by the server (their names carry this run's
id), each sent over a new WebSocket twice: the `first` turn, whose grammar the server has not
prepared, then the same request again (`next`: the grammar is ready). Against a server of this
checkout also `warmed` (a Responses warm-up, `generate: false` with the tools, then the turn
continuing it after `--warm-gap-ms`, as a voice pipeline that connects before the caller
speaks) and `preloaded` (another N sets given to the server in `--tools-preload`). Per kind,
over the sets: the server's host overhead and grammar wait (its timing block) and the
client's TTFT, p50 and max.

The server is `turnspec serve` in a child process (`--tool-sets-engine`: the fake fixed-rate
engine, or the embedded one), or a running one (`--url`). `--baseline-root DIR` starts a second
child from another checkout (DIR/turnspec, e.g. the base commit's tree) and takes the same sets
through both, set by set in turn: a before/after in one run.

    turnspec bench frontend --tool-sets 5 --baseline-root /tmp/base --json out/cold.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from turnspec.loadtest.clients import ResponsesSocketClient
from turnspec.loadtest.stats import percentile

KINDS = ("first", "next", "warmed", "preloaded")
INSTRUCTIONS = "You are the booking line of a dental practice. Keep answers short."
USER = "Hi, I need to move my cleaning appointment to next Tuesday morning."


def add_tool_set_args(p: argparse.ArgumentParser) -> None:
    """`turnspec bench frontend`'s flags for this measurement."""
    t = p.add_argument_group("cold tool sets (benchmarks/frontend_tools.py)")
    t.add_argument("--tool-sets", type=int, default=0, metavar="N",
                   help="instead: N never-seen tool sets, each one's first turn against its "
                        "next turn (and after a warm-up, and preloaded)")
    t.add_argument("--tool-sets-engine", choices=("fake-fixed-rate", "local"),
                   default="fake-fixed-rate", help="the child server's engine")
    t.add_argument("--url", default=None, help="a running server's ws://HOST:PORT/v1/responses "
                   "instead of a child")
    t.add_argument("--baseline-root", default=None, metavar="DIR",
                   help="also a child server from DIR/turnspec (another checkout), same sets")
    t.add_argument("--warm-gap-ms", type=float, default=500.0,
                   help="warm-up to first turn (default: %(default)s)")


def tool_set(tag: str) -> list[dict[str, Any]]:
    """Three functions a voice agent might declare, named after `tag` (Responses form)."""
    def fn(verb: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
        return {"type": "function", "name": f"{verb}_{tag}", "description": f"{verb} a booking",
                "parameters": {"type": "object", "properties": props, "required": required}}

    return [fn("find", {"name": {"type": "string"}, "date": {"type": "string"}}, ["name"]),
            fn("move", {"booking_id": {"type": "string"}, "day": {
                "enum": ["monday", "tuesday", "wednesday", "thursday", "friday"]},
                "hour": {"type": "integer", "minimum": 8, "maximum": 18}}, ["booking_id", "day"]),
            fn("cancel", {"booking_id": {"type": "string"}, "reason": {"type": "string"}},
               ["booking_id"])]


def _sample(rec: Any) -> dict[str, float | None] | None:
    if not rec.ok:
        return None
    t = rec.timing
    return {"host_overhead_ms": t.get("host_overhead_ms"), "grammar_ms": t.get("grammar_ms"),
            "ttft_ms": rec.ttft_ms}


async def _turns(url: str, tools: list[dict], kind: str, gap_s: float) -> list[tuple[str, Any]]:
    """(kind, record) of the turns one set gives on a new connection."""
    ws = await ResponsesSocketClient(url).connect()
    turn = {"instructions": INSTRUCTIONS, "tools": tools, "max_output_tokens": 8}
    try:
        if kind == "warmed":
            warm = await ws.create([], generate=False, instructions=INSTRUCTIONS, tools=tools)
            if not warm.ok:
                return [("warmed", warm)]
            await asyncio.sleep(gap_s)
            return [("warmed", await ws.create(USER, previous_response_id=warm.response_id,
                                               **turn))]
        first = await ws.create(USER, **turn)
        if kind == "preloaded":
            return [("preloaded", first)]
        return [("first", first), ("next", await ws.create(USER, **turn))]
    finally:
        await ws.close()


async def measure(servers: dict[str, tuple[str, tuple[str, ...]]], sets: int, run_id: str,
                  gap_s: float) -> dict[str, dict[str, list]]:
    """{server: {kind: [sample, or {"error"}, per set]}} for servers {name: (url, kinds)};
    every server gets the same sets, set by set in turn."""
    out: dict[str, dict[str, list]] = {s: {k: [] for k in kinds} for s, (_, kinds) in
                                       servers.items()}
    for i in range(sets):
        for name, (url, kinds) in servers.items():
            for kind in ("first", *[k for k in kinds if k in ("warmed", "preloaded")]):
                tag = {"first": "c", "warmed": "w", "preloaded": "p"}[kind]
                for k, rec in await _turns(url, tool_set(f"{tag}{i}_{run_id}"), kind, gap_s):
                    out[name][k].append(_sample(rec) or {"error": rec.error})
    return out


def summarize(samples: list[dict]) -> dict[str, Any]:
    ok = [s for s in samples if "error" not in s]
    row: dict[str, Any] = {"n": len(ok), "errors": len(samples) - len(ok)}
    for key in ("host_overhead_ms", "grammar_ms", "ttft_ms"):
        xs = [s[key] for s in ok if s.get(key) is not None]
        row[key] = {"p50": percentile(xs, 50), "max": max(xs)} if xs else None
    return row


def format_table(summary: dict[str, dict[str, dict[str, Any]]]) -> str:
    head = (f"{'server':<10}{'turn':<11}{'host p50':>10}{'host max':>10}{'grammar p50':>13}"
            f"{'TTFT p50':>10}{'TTFT max':>10}{'ok':>6}")
    lines = [head, "-" * len(head)]
    for server, kinds in summary.items():
        for kind, row in kinds.items():
            if row["n"] == 0 and row["errors"] == 0:
                continue

            def cell(key: str, q: str, r: dict = row) -> str:
                return f"{r[key][q]:.2f}" if r[key] else "-"

            lines.append(f"{server:<10}{kind:<11}{cell('host_overhead_ms', 'p50'):>10}"
                         f"{cell('host_overhead_ms', 'max'):>10}{cell('grammar_ms', 'p50'):>13}"
                         f"{cell('ttft_ms', 'p50'):>10}{cell('ttft_ms', 'max'):>10}"
                         f"{row['n']:>4}/{row['n'] + row['errors']}")
    return "\n".join(lines)


def start_serve(args: Any, *, root: str | None, preload: Path | None) -> tuple[Any, str]:
    """`turnspec serve` in a child process (this checkout, or the one under `root`); returns
    (process, its WebSocket URL) once it says ready."""
    cmd = [sys.executable, "-m", "turnspec.cli.main", "--log-level", "warning", "serve",
           "--engine", args.tool_sets_engine, "--port", "0", "--grpc-port", "-1"]
    if args.model:
        cmd += ["--model", args.model]
    if args.tool_sets_engine == "fake-fixed-rate":
        cmd += ["--fake-first-token-ms", str(args.first_token_ms), "--fake-interval-ms",
                str(args.interval_ms), "--fake-tokens", "8"]
    if preload is not None:
        cmd += ["--tools-preload", str(preload)]
    env = dict(os.environ, PYTHONPATH=root) if root else None
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, cwd=root or None)
    assert proc.stdout is not None
    seen, port = [], None
    for line in proc.stdout:
        seen.append(line)
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        port = int(m[1]) if m else port
        if "turnspec: ready" in line and port:
            return proc, f"ws://127.0.0.1:{port}/v1/responses"
    raise RuntimeError(f"turnspec serve ({root or 'this checkout'}) exited before ready:\n"
                       + "".join(seen[-20:]))


def run(args: Any) -> int:
    if args.tool_sets < 1 or args.warm_gap_ms < 0:
        raise ValueError("--tool-sets must be >= 1 and --warm-gap-ms >= 0")
    if args.baseline_root and not (Path(args.baseline_root) / "turnspec").is_dir():
        raise ValueError(f"--baseline-root {args.baseline_root}: expected a folder holding the "
                         "other checkout as turnspec/ (e.g. `git archive BASE | tar -x -C "
                         "DIR/turnspec`)")
    run_id = uuid.uuid4().hex[:8]
    procs: list[Any] = []
    servers: dict[str, tuple[str, tuple[str, ...]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            if args.url:  # a running server: whether it takes warm-ups is its business
                servers["url"] = (args.url, ("first", "next", "warmed"))
            else:
                preload = Path(tmp) / "tools.jsonl"
                preload.write_text("".join(json.dumps(tool_set(f"p{i}_{run_id}")) + "\n"
                                           for i in range(args.tool_sets)))
                proc, url = start_serve(args, root=None, preload=preload)
                procs.append(proc)
                servers["this"] = (url, KINDS)
            if args.baseline_root:  # another checkout: first and next turns only
                proc, url = start_serve(args, root=args.baseline_root, preload=None)
                procs.append(proc)
                servers["baseline"] = (url, ("first", "next"))
            samples = asyncio.run(measure(servers, args.tool_sets, run_id,
                                          args.warm_gap_ms / 1000.0))
        finally:
            for p in procs:
                p.terminate()
                p.wait(30)
    summary = {s: {k: summarize(v) for k, v in by_kind.items()} for s, by_kind in samples.items()}
    print(f"bench frontend --tool-sets: {args.tool_sets} never-seen sets of 3 functions a "
          f"server, engine {args.tool_sets_engine if not args.url else args.url}; ms; "
          f"warmed = warm-up, {args.warm_gap_ms:g} ms, then the turn")
    print(format_table(summary))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({
            "config": {k: v for k, v in vars(args).items() if k != "func"},
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "host": {"cpus": os.cpu_count(), "load_avg_1m": os.getloadavg()[0]},
            "servers": {k: url for k, (url, _) in servers.items()}, "summary": summary, "samples": samples}, indent=2))
    return 0
