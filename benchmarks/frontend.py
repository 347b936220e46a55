"""`turnspec bench frontend`: what each transport adds over calling the engine in-process.

The engine is `FakeFixedRateEngine` (deliberately fake: token i of a request is ready at
exactly accepted + first_token_ms + i * interval_ms), so the only variable is the front end.
The server runs in a child process (as in production: clients elsewhere); the clients are
`turnspec.loadtest.clients` over real sockets on 127.0.0.1. Two numbers per transport:

- TTFT overhead: client-measured TTFT minus the in-process TTFT (request parsing, template
  rendering, session/admission, both socket hops, client parsing);
- per-token overhead: token delivery lag, i.e. arrival time minus the token's scheduled
  ready time (server's engine-accept clock + schedule), minus the in-process lag.

    turnspec bench frontend --concurrency 32 --json out/bench_frontend.json

`--tool-sets N` measures instead what a never-seen tool set costs its first turn
(benchmarks/frontend_tools.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from turnspec.benchmarks.frontend_server import start_child
from turnspec.benchmarks.frontend_tools import add_tool_set_args
from turnspec.loadtest.stats import percentile

TRANSPORTS = ("http", "ws", "grpc")
PROMPT = [
    {"role": "system", "content": "You are a concise voice assistant for a restaurant. Answer in "
     "one or two short sentences. Offer to book a table when it helps."},
    {"role": "user", "content": "Hi, do you have a table for four tonight around eight, and is "
     "there parking nearby?"},
]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("frontend", help="added latency of HTTP/WS/gRPC over "
                                    "in-process calls (fake fixed-rate engine)")
    p.add_argument("--model", default=None, help="model folder for the chat template/tokenizer "
                   "(default: SmolLM2); no weights are loaded")
    p.add_argument("--concurrency", type=int, default=32, help="concurrent streams")
    p.add_argument("--requests", type=int, default=4, help="sequential requests per stream")
    p.add_argument("--tokens", type=int, default=64, help="tokens per response")
    p.add_argument("--first-token-ms", type=float, default=20.0)
    p.add_argument("--interval-ms", type=float, default=10.0)
    p.add_argument("--transports", default=",".join(TRANSPORTS))
    p.add_argument("--burst", action="store_true",
                   help="start all streams at once (default: staggered over one request)")
    p.add_argument("--trace", choices=("off", "on", "both"), default="off",
                   help="serve with tracing exporting over OTLP to a receiver in this process "
                        "(both: each transport untraced, then traced, for the overhead)")
    p.add_argument("--json", default=None, help="write results to this JSON file")
    add_tool_set_args(p)
    p.set_defaults(func=run)


def _pct(xs: list[float], q: float) -> float:
    return percentile(xs, q) if xs else float("nan")


def _summary(ttfts: list[float], lags: list[float], ok: int, total: int,
             server_in: list[float] | None = None) -> dict[str, Any]:
    out = {"ttft_p50_ms": _pct(ttfts, 50), "ttft_p90_ms": _pct(ttfts, 90),
           "lag_p50_ms": _pct(lags, 50), "lag_p90_ms": _pct(lags, 90),
           "ok": ok, "total": total, "tokens": len(lags)}
    if server_in is not None:  # server receive -> engine accepted (parse, render, session)
        out["server_in_p50_ms"] = _pct(server_in, 50)
    return out


def _offset_s(args: argparse.Namespace, stream: int) -> float:
    """Stream start offsets spread over one request's duration: steady-state concurrency, not
    a synchronized burst (a burst of N measures N-deep queueing, see --burst)."""
    if args.burst:
        return 0.0
    duration_ms = args.first_token_ms + (args.tokens - 1) * args.interval_ms
    return stream * duration_ms / args.concurrency / 1000.0


def _lags(arrivals_unix_ms: list[float], ready0_unix_ms: float, interval_ms: float) -> list[float]:
    """Per-token delivery lag for tokens 1..n-1 (token 0 is TTFT's business)."""
    return [a - (ready0_unix_ms + i * interval_ms) for i, a in enumerate(arrivals_unix_ms)][1:]


# -- in-process baseline ---------------------------------------------------------------------

async def _inprocess(args: argparse.Namespace, chat: Any) -> dict[str, Any]:
    from turnspec.engine.fake import FakeFixedRateEngine
    from turnspec.engine.protocol import GenerateRequest, SamplingParams

    engine = FakeFixedRateEngine(chat, first_token_ms=args.first_token_ms,
                                 interval_ms=args.interval_ms, tokens_per_request=args.tokens)
    prompt = chat.render(PROMPT)
    ttfts: list[float] = []
    lags: list[float] = []
    n = 0

    async def stream(s: int) -> None:
        nonlocal n
        await asyncio.sleep(_offset_s(args, s))
        for r in range(args.requests):
            req = GenerateRequest(f"b{s}-{r}", prompt,
                                  SamplingParams(max_tokens=args.tokens + 1))
            t0, arrivals, ready0 = time.perf_counter(), [], 0.0
            t0_unix = time.time() * 1000.0
            async for d in engine.generate(req):
                if d.text:
                    arrivals.append(t0_unix + (time.perf_counter() - t0) * 1000.0)
                if d.finished and d.timing is not None:
                    ready0 = d.timing.received_unix_ms + args.first_token_ms
            ttfts.append(arrivals[0] - t0_unix)
            lags.extend(_lags(arrivals, ready0, args.interval_ms))
            n += 1

    await asyncio.gather(*(stream(s) for s in range(args.concurrency)))
    total = args.concurrency * args.requests
    return _summary(ttfts, lags, n, total)


async def _over_transport(args: argparse.Namespace, transport: str, port: int,
                          grpc_port: int) -> dict[str, Any]:
    from turnspec.loadtest.clients import (
        ChatCompletionsClient,
        GenerationClient,
        ResponsesSocketClient,
    )

    http = ChatCompletionsClient(f"http://127.0.0.1:{port}/v1") if transport == "http" else None
    grpc_c = GenerationClient(f"127.0.0.1:{grpc_port}") if transport == "grpc" else None
    ttfts: list[float] = []
    lags: list[float] = []
    server_in: list[float] = []
    ok = 0

    async def one(ws: Any) -> Any:
        if http is not None:
            return await http.complete(PROMPT, max_tokens=args.tokens + 1)
        if grpc_c is not None:
            return await grpc_c.generate(PROMPT, max_tokens=args.tokens + 1)
        return await ws.create([{"role": m["role"], "content": m["content"]} for m in PROMPT],
                               max_output_tokens=args.tokens + 1)

    async def stream(record: bool, s: int = 0) -> None:
        nonlocal ok
        await asyncio.sleep(_offset_s(args, s) if record else 0.0)
        ws = None
        if transport == "ws":
            ws = await ResponsesSocketClient(f"ws://127.0.0.1:{port}/v1/responses").connect()
        try:
            for _ in range(args.requests if record else 1):
                rec = await one(ws)
                if not record or not rec.ok or not rec.chunk_ms:
                    continue
                ok += 1
                arrivals = [rec.start_unix_ms + c for c in rec.chunk_ms]
                ttfts.append(rec.ttft_ms)
                t = rec.timing
                server_in.append(t["received_unix_ms"] - t["server_received_unix_ms"])
                ready0 = t["received_unix_ms"] + args.first_token_ms
                lags.extend(_lags(arrivals, ready0, args.interval_ms))
        finally:
            if ws is not None:
                await ws.close()

    await asyncio.gather(*(stream(False) for _ in range(min(4, args.concurrency))))  # warm-up
    await asyncio.gather(*(stream(True, s) for s in range(args.concurrency)))
    for c in (http, grpc_c):
        if c is not None:
            await c.close()
    return _summary(ttfts, lags, ok, args.concurrency * args.requests, server_in)


# -- report ----------------------------------------------------------------------------------

def format_table(results: dict[str, dict[str, Any]]) -> str:
    base = results["in-process"]
    head = (f"{'transport':<11}{'TTFT p50':>10}{'TTFT p90':>10}{'+TTFT p50':>11}{'+TTFT p90':>11}"
            f"{'lag p50':>10}{'lag p90':>10}{'+tok p50':>10}{'+tok p90':>10}{'srv-in p50':>12}"
            f"{'ok':>10}")
    lines = [head, "-" * len(head)]
    for name, r in results.items():
        d = name != "in-process"

        def delta(k: str, r: dict[str, Any] = r, d: bool = d) -> str:
            return f"{r[k] - base[k]:+.3f}" if d else "-"

        lines.append(f"{name:<11}{r['ttft_p50_ms']:>10.3f}{r['ttft_p90_ms']:>10.3f}"
                     f"{delta('ttft_p50_ms'):>11}{delta('ttft_p90_ms'):>11}"
                     f"{r['lag_p50_ms']:>10.3f}{r['lag_p90_ms']:>10.3f}"
                     f"{delta('lag_p50_ms'):>10}{delta('lag_p90_ms'):>10}"
                     f"{_fmt(r.get('server_in_p50_ms')):>12}"
                     f"{str(r['ok']) + '/' + str(r['total']):>10}")
    return "\n".join(lines)


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def _serve_and_measure(args: argparse.Namespace, model_dir: str, transports: list[str],
                       otlp: str | None) -> dict[str, dict[str, Any]]:
    proc, port, grpc_port = start_child(args, model_dir, otlp)
    try:
        return {t: asyncio.run(_over_transport(args, t, port, grpc_port)) for t in transports}
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(30)
        except Exception:
            proc.kill()


def tracing_overhead(off: dict[str, Any], on: dict[str, Any],
                     interval_ms: float) -> dict[str, float]:
    """What tracing adds to one transport: TTFT p50 in ms, and the p50 per-token latency
    (the interval plus its delivery lag) in percent."""
    return {"ttft_p50_ms": on["ttft_p50_ms"] - off["ttft_p50_ms"],
            "per_token_p50_pct": 100.0 * (on["lag_p50_ms"] - off["lag_p50_ms"])
            / (interval_ms + off["lag_p50_ms"])}


def run(args: argparse.Namespace) -> int:
    if args.tool_sets:
        from turnspec.benchmarks.frontend_tools import run as run_tool_sets

        return run_tool_sets(args)  # another measurement: benchmarks/frontend_tools.py
    from turnspec.benchmarks.otlp_sink import OtlpSink
    from turnspec.engine.chat import ChatTemplate
    from turnspec.engine.local.args import resolve_model_dir

    transports = [t for t in args.transports.split(",") if t]
    for t in transports:
        if t not in TRANSPORTS:
            raise ValueError(f"--transports: expected a subset of {','.join(TRANSPORTS)}, got {t!r}")
    if args.concurrency < 1 or args.requests < 1 or args.tokens < 2:
        raise ValueError("--concurrency and --requests must be >= 1 and --tokens >= 2")
    model_dir = resolve_model_dir(args.model)
    chat = ChatTemplate.from_model_dir(model_dir)
    results: dict[str, dict[str, Any]] = {"in-process": asyncio.run(_inprocess(args, chat))}
    if args.trace in ("off", "both"):
        results |= _serve_and_measure(args, model_dir, transports, None)
    sink = OtlpSink(keep=False) if args.trace != "off" else None
    if sink is not None:
        try:
            traced = _serve_and_measure(args, model_dir, transports, sink.endpoint)
        finally:
            sink.stop()
        results |= {f"{t}+trace": r for t, r in traced.items()}
    print(f"bench frontend: FakeFixedRateEngine first_token={args.first_token_ms} ms, "
          f"interval={args.interval_ms} ms, {args.tokens} tokens, {args.concurrency} streams x "
          f"{args.requests} requests; milliseconds; + = over in-process")
    print(format_table(results))
    overhead = {}
    if sink is not None and args.trace == "both":
        overhead = {t: tracing_overhead(results[t], results[f"{t}+trace"], args.interval_ms)
                    for t in transports}
        print(f"tracing on (OTLP/gRPC to a local receiver, {sink.count} spans received) vs off:")
        for t, o in overhead.items():
            print(f"  {t:<5} TTFT p50 {o['ttft_p50_ms']:+.3f} ms   per-token p50 "
                  f"{o['per_token_p50_pct']:+.2f}%")
    if args.json:
        base = results["in-process"]
        out = {"config": {k: v for k, v in vars(args).items() if k != "func"},
               "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "host": {"cpus": os.cpu_count(), "python": platform.python_version(),
                        "load_avg_1m": os.getloadavg()[0]},
               "results": results,
               "overhead": {t: {"ttft_p50_ms": r["ttft_p50_ms"] - base["ttft_p50_ms"],
                                "per_token_p50_ms": r["lag_p50_ms"] - base["lag_p50_ms"]}
                            for t, r in results.items() if t != "in-process"},
               "tracing_overhead": overhead,
               "spans_received": sink.count if sink is not None else 0}
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0
