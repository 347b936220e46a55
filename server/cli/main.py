"""`turnspec` console script: one subcommand per module, each with register(subparsers)."""

from __future__ import annotations

import argparse
import logging
import sys


def build_parser() -> argparse.ArgumentParser:
    from turnspec.server.cli import (
        bench_cpu_gemm,
        bench_engine,
        bench_frontend,
        bench_load,
        bench_spec,
        bench_tools,
        generate,
        models,
        serve,
        speculator,
        workload,
    )

    parser = argparse.ArgumentParser(prog="turnspec", description=__doc__)
    parser.add_argument("--log-level", default="info", help="debug | info | warning (default: info)")
    sub = parser.add_subparsers(dest="command", required=True)
    serve.register(sub)
    models.register(sub)
    generate.register(sub)
    speculator.register(sub)
    workload.register(sub)
    bench = sub.add_parser("bench", help="benchmarks (print a table, write JSON)")
    bench_sub = bench.add_subparsers(dest="bench_command", required=True)
    bench_cpu_gemm.register(bench_sub)
    bench_engine.register(bench_sub)
    bench_frontend.register_bench(bench_sub)
    bench_load.register(bench_sub)
    bench_spec.register(bench_sub)
    bench_tools.register(bench_sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, KeyError) as e:
        print(f"turnspec {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
