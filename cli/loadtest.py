"""`turnspec loadtest`: p50/p90/p99 of voice turns over WS, gRPC and HTTP, explained by the
server's timing (docs/loadtest.md).

    turnspec loadtest --url ws://127.0.0.1:8000/v1/responses --concurrency 4 --duration 20
    turnspec loadtest --url grpc://127.0.0.1:50051 --rate 10 --workload synthetic:128,64
    turnspec loadtest --url http://127.0.0.1:8000/v1 --sweep 1,2,4,8 --requests 40 --plot out/
    turnspec loadtest --url http://127.0.0.1:30000/generate --workload rendered.jsonl
    turnspec loadtest compare A.json B.json

Same tokens on SGLang's own server: `turnspec workload render --out rendered.jsonl` writes the
conversations with the prompt ids turnspec renders for each turn; `--url .../generate` sends
those ids (and the tools' structural tag) to SGLang's native endpoint, while turnspec plays the
same file with `--resend-history` (each turn's whole scripted history, as the ids were
rendered). `--tool-mode` splits the tools' cost: none, in the prompt only, or with the grammar.

Exit code: 0, or 1 when the error rate exceeded --max-error-rate (the report is written
either way), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported lazily at run time: `turnspec --help` stays fast
    from turnspec.loadtest.run_config import RunConfig
    from turnspec.loadtest.stats import Slo
    from turnspec.loadtest.targets import Target
    from turnspec.loadtest.workload import WorkloadSpec

DEFAULT_DURATION_S = 20.0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "loadtest", help="p50/p90/p99 of voice turns over WS, gRPC, HTTP, with the server's "
        "timing breakdown", description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--url", help="ws://HOST:PORT/v1/responses | grpc://HOST:PORT | "
                   "http://HOST:PORT/v1 (OpenAI chat completions: any such server) | "
                   "http://HOST:PORT/generate (SGLang's native endpoint, on the token ids of a "
                   "`turnspec workload render` file)")
    _add_load(p.add_argument_group("load"))
    _add_workload(p.add_argument_group("workload"))
    _add_report(p.add_argument_group("report"))
    sub = p.add_subparsers(dest="loadtest_command", metavar="{compare}")
    c = sub.add_parser("compare", help="deltas between two result JSONs, with a significance "
                       "note")
    c.add_argument("a")
    c.add_argument("b")
    p.set_defaults(func=run)


def _add_load(g: argparse._ArgumentGroup) -> None:
    mode = g.add_mutually_exclusive_group()
    mode.add_argument("--concurrency", type=int, help="closed loop: N conversations at once "
                      "(default: 1)")
    mode.add_argument("--rate", type=float, help="open loop: turns per second, Poisson "
                      "arrivals (see --burstiness)")
    g.add_argument("--burstiness", type=float, default=1.0,
                   help="gamma shape of the gaps: 1 Poisson, <1 burstier (default: 1)")
    g.add_argument("--max-concurrency", type=int, help="open loop: cap on turns in flight")
    g.add_argument("--duration", type=float, help=f"seconds of dispatch (default: "
                   f"{DEFAULT_DURATION_S:g} unless --requests)")
    g.add_argument("--requests", type=int, help="measured turns")
    g.add_argument("--warmup", type=int, default=0, help="turns first, not measured; all must "
                   "succeed")
    g.add_argument("--barge-in", type=float, default=0.0, metavar="P",
                   help="cancel this fraction of turns after --barge-in-after chunks")
    g.add_argument("--barge-in-after", type=int, default=8, metavar="K")
    g.add_argument("--sweep", help="closed-loop concurrency levels in one command, e.g. "
                   "1,2,4,8,16")
    g.add_argument("--timeout", type=float, default=120.0, help="per turn, seconds")
    g.add_argument("--grace", type=float, default=30.0,
                   help="seconds turns in flight may finish after --duration")


def _add_workload(w: argparse._ArgumentGroup) -> None:
    w.add_argument("--workload", default="voice",
                   help="voice | FILE.jsonl | synthetic:IN,OUT (default: voice)")
    w.add_argument("--seed", type=int, default=0)
    w.add_argument("--max-tokens", type=int, default=96,
                   help="per turn for voice/file workloads (synthetic: OUT)")
    w.add_argument("--temperature", type=float, default=0.0)
    w.add_argument("--tool-choice", choices=("script", "auto"), default="script",
                   help="script: tool_choice=required on the turns the workload answers with a "
                   "tool call (which tool and arguments stay the model's), auto elsewhere; "
                   "auto: never forced (default: %(default)s)")
    w.add_argument("--tool-mode", choices=("grammar", "prompt", "none"), default="grammar",
                   help="grammar: tools sent with --tool-choice; prompt: sent with tool_choice "
                   "none (in the prompt, no grammar); none: no tools (default: %(default)s)")
    w.add_argument("--resend-history", action="store_true",
                   help="WS: every turn sends its whole scripted history (no "
                   "previous_response_id), the prompts a rendered token file holds")
    w.add_argument("--tokenizer", help="model folder whose tokenizer counts synthetic prompt "
                   "tokens (default: the prepared SmolLM2 folder)")
    w.add_argument("--model", help="model name sent over HTTP (default: the first of GET "
                   "/v1/models)")
    w.add_argument("--api-key", default=None)


def _add_report(o: argparse._ArgumentGroup) -> None:
    o.add_argument("--out", help="write the result JSON here")
    o.add_argument("--history", default=None,
                   help="append args + results here (default: loadtest/history.jsonl in the "
                   "turnspec cache, $TURNSPEC_CACHE or ~/.cache/turnspec; '' for none)")
    o.add_argument("--details", help="per-turn CSV")
    o.add_argument("--plot", help="PNG plots into this folder (matplotlib)")
    o.add_argument("--slo", help="goodput bounds, e.g. ttft:300,ttfs:800,itl:60,e2e:3000")
    o.add_argument("--max-error-rate", type=float, default=0.0,
                   help="exit 1 when errors / turns exceed this (default: 0)")
    o.add_argument("--saturation-ms", type=float, default=10.0,
                   help="flag the client as the bottleneck when its event-loop or arrival lag "
                   "p99 exceeds this (default: %(default)s)")
    o.add_argument("--no-rtt-probe", action="store_true", help="no RTT probe before each turn")
    o.add_argument("--no-progress", action="store_true")
    o.add_argument("--burn-loop-ms", type=float, default=0.0, help="self-check: block the "
                   "client's event loop this many ms of every 100 (the saturation report must "
                   "fire)")


def run(args: argparse.Namespace) -> int:
    if getattr(args, "loadtest_command", None) == "compare":
        from turnspec.loadtest.compare import compare_files

        print(compare_files(args.a, args.b))
        return 0
    if not args.url:
        raise ValueError("--url is required (ws://…/v1/responses, grpc://host:port, "
                         "http://…/v1 or http://…/generate)")
    from turnspec.loadtest import report
    from turnspec.loadtest.stats import Slo
    from turnspec.loadtest.targets import Target
    from turnspec.loadtest.workload import WorkloadSpec

    target = Target.parse(args.url)
    spec = WorkloadSpec.parse(args.workload, args.max_tokens)
    slo = Slo.parse(args.slo)
    if not 0.0 <= args.max_error_rate <= 1.0:
        raise ValueError(f"--max-error-rate: expected 0..1, got {args.max_error_rate}")
    levels = _levels(args)
    tokenizer = _tokenizer(args) if spec.kind == "synthetic" else None
    tokens = _token_table(args, spec) if target.transport == "generate" else None
    results = []
    for level in levels:
        cfg = _run_config(args, level)
        res, records = asyncio.run(_run_once(args, target, spec, cfg, slo, tokenizer, tokens))
        print(report.format_table(res), flush=True)
        results.append((res, records))
    _write_results(args, results)
    worst = max(r["requests"]["error_rate"] for r, _ in results)
    if worst > args.max_error_rate:
        print(f"turnspec loadtest: error rate {worst:.1%} exceeds --max-error-rate "
              f"{args.max_error_rate:.1%}", file=sys.stderr)
        return 1
    return 0


def _levels(args: argparse.Namespace) -> list[int | None]:
    """--sweep's concurrency levels ([None]: one run as the load flags say)."""
    if not args.sweep:
        return [None]
    if args.rate is not None:
        raise ValueError("--sweep varies the closed loop's concurrency; drop --rate")
    try:
        levels = [int(x) for x in args.sweep.split(",") if x]
    except ValueError:
        levels = []
    if not levels:
        raise ValueError(f"--sweep {args.sweep!r}: expected integers, e.g. 1,2,4,8")
    return levels


def _run_config(args: argparse.Namespace, level: int | None) -> RunConfig:
    from turnspec.loadtest.run_config import RunConfig

    concurrency = level if level is not None else (
        None if args.rate is not None else args.concurrency or 1)
    duration = args.duration if args.duration is not None or args.requests else DEFAULT_DURATION_S
    return RunConfig(
        concurrency=concurrency, rate=args.rate, burstiness=args.burstiness,
        max_concurrency=args.max_concurrency, duration_s=duration, requests=args.requests,
        warmup=args.warmup, barge_in=args.barge_in, barge_in_after=args.barge_in_after,
        seed=args.seed, rtt_probe=not args.no_rtt_probe, temperature=args.temperature,
        tool_choice=args.tool_choice, tool_mode=args.tool_mode, timeout_s=args.timeout,
        grace_s=args.grace, burn_loop_ms=args.burn_loop_ms)


def _write_results(args: argparse.Namespace, results: list[tuple[dict, list]]) -> None:
    """--out (a sweep's levels in one JSON), the history, --details and --plot."""
    from turnspec.loadtest import report

    final = results[0][0] if len(results) == 1 else sweep_result([r for r, _ in results])
    if args.out:
        report.write_json(final, args.out)
    history = args.history if args.history is not None else _default_history()
    if history:
        for res, _ in results:
            report.append_history(res, history)
    if args.details:
        report.write_details([r for _, recs in results for r in recs], args.details)
    if args.plot:
        from turnspec.loadtest.plots import write_plots

        for path in write_plots([r for r, _ in results], args.plot):
            print(f"plot: {path}")


def _token_table(args: argparse.Namespace, spec: WorkloadSpec) -> Any:
    from turnspec.loadtest.token_table import TokenTable

    if spec.kind != "file":
        raise ValueError("--url .../generate plays a `turnspec workload render` file: pass it as "
                         "--workload FILE")
    table = TokenTable.load(spec.path)
    if table.tools_in_prompt != (args.tool_mode != "none"):
        raise ValueError(f"--tool-mode {args.tool_mode}: {spec.path} was rendered "
                         f"{'with' if table.tools_in_prompt else 'without'} the tools in the "
                         "prompt; render it " + ("with --no-tools" if args.tool_mode == "none"
                                                 else "without --no-tools"))
    return table


def _default_history() -> Path:
    from turnspec.engine.model.prepare import default_cache_root

    return default_cache_root() / "loadtest" / "history.jsonl"


def _tokenizer(args: argparse.Namespace) -> Any:
    from turnspec.engine.model.prepare import default_model_dir
    from turnspec.loadtest.workload import load_tokenizer

    folder = Path(args.tokenizer) if args.tokenizer else default_model_dir()
    if not (folder / "tokenizer.json").is_file() and not (folder / "tokenizer_config.json"
                                                           ).is_file():
        raise FileNotFoundError(f"--tokenizer {folder}: no tokenizer there; pass a model folder "
                                "(turnspec serve prepares the SmolLM2 one on first use)")
    return load_tokenizer(str(folder))


async def _run_once(args: argparse.Namespace, target: Target, spec: WorkloadSpec,
                    cfg: RunConfig, slo: Slo | None, tokenizer: Any,
                    tokens: Any = None) -> tuple[dict[str, Any], list[Any]]:
    from turnspec.loadtest.aggregate import build_result
    from turnspec.loadtest.progress import LiveProgress
    from turnspec.loadtest.run_config import RunResult
    from turnspec.loadtest.runner import Runner
    from turnspec.loadtest.targets import Connector
    from turnspec.loadtest.workload import WorkloadError, open_source

    load = {"mode": "closed" if cfg.rate is None else "open", "concurrency": cfg.concurrency,
            "rate": cfg.rate, "burstiness": cfg.burstiness,
            "max_concurrency": cfg.max_concurrency, "duration_s": cfg.duration_s,
            "requests": cfg.requests, "warmup": cfg.warmup, "barge_in": cfg.barge_in,
            "barge_in_after": cfg.barge_in_after, "seed": cfg.seed}
    argd = {k: v for k, v in vars(args).items() if k not in ("func", "api_key")}
    common = {"url": target.url, "transport": target.transport, "loopback": target.loopback,
              "workload": spec.label, "load": load, "args": argd, "slo": slo,
              "saturation_ms": args.saturation_ms}
    try:  # warmup takes the stream's first conversations, measuring continues after them
        source, workload_errors = open_source(spec, cfg.seed, tokenizer)
    except WorkloadError as e:
        run = RunResult(notes=[f"workload unusable, nothing was sent: {e}"])
        return build_result(run, workload_errors=e.errors, **common), []
    width = cfg.concurrency or cfg.max_concurrency or 256
    connector = Connector(target, api_key=args.api_key, model=args.model,
                          max_connections=max(256, 2 * width), tokens=tokens,
                          resend_history=args.resend_history)
    label = f"loadtest {target.transport} " + (f"c={cfg.concurrency}" if cfg.concurrency
                                               else f"rate={cfg.rate:g}/s")
    progress = LiveProgress(label, cfg.requests, cfg.duration_s,
                            enabled=not args.no_progress and sys.stderr.isatty())
    progress.start()
    try:
        run = await Runner(cfg, connector, source, on_record=progress.update).run()
    finally:
        progress.stop()
        await connector.close()
    return build_result(run, workload_errors=workload_errors, **common), run.records


def sweep_result(results: list[dict[str, Any]]) -> dict[str, Any]:
    """A sweep's JSON: every level's result under `runs`, a compact curve under `sweep`, and
    the contract keys (`metrics`, `requests`, ...) of the highest level at the top."""
    curve = [{"concurrency": r["load"]["concurrency"],
              "requests_per_s": r["throughput"]["requests_per_s"],
              "output_tokens_per_s": r["throughput"]["output_tokens_per_s"],
              **{f"{m}_{q}": r["metrics"][m][q] for m in ("ttft_ms", "itl_ms", "e2e_ms")
                 for q in ("p50", "p90", "p99")}} for r in results]
    top = {k: v for k, v in results[-1].items() if k != "samples"}
    return {**top, "sweep": curve, "runs": results}
