"""`turnspec` console script: one module per command group, each with register(subparsers);
the benchmarks register themselves under `turnspec bench` (cli/bench.py)."""

from __future__ import annotations

import argparse
import logging
import sys


def build_parser() -> argparse.ArgumentParser:
    from turnspec.cli import (
        bench,
        chat,
        generate,
        loadtest,
        models,
        serve,
        simulate,
        speculator,
        workload,
    )

    parser = argparse.ArgumentParser(prog="turnspec", description=__doc__)
    parser.add_argument("--log-level", default="info", help="debug | info | warning (default: info)")
    sub = parser.add_subparsers(dest="command", required=True)
    for group in (serve, generate, chat, models, speculator, workload, bench, loadtest,
                  simulate):
        group.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, KeyError) as e:
        print(f"turnspec {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
