"""`turnspec bench ...`: every benchmark is a module of `turnspec.benchmarks` that registers its
own flags (a benchmark's flags are part of what it measures); this group only wires them.
Each prints a table and writes JSON."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    from turnspec.benchmarks import (
        cpu_gemm,
        engine,
        frontend,
        grammar_walk,
        load,
        mask,
        spec,
        tool_calls,
        tools,
        voice_defaults,
    )

    bench = subparsers.add_parser("bench", help="benchmarks (print a table, write JSON)")
    sub = bench.add_subparsers(dest="bench_command", required=True)
    for module in (cpu_gemm, engine, frontend, grammar_walk, load, spec, tools, tool_calls, mask,
                   voice_defaults):
        module.register(sub)
    from turnspec.benchmarks.stress import cli as stress

    stress.register(sub)  # stress + soak (docs/reliability.md)
