"""`turnspec bench stress` and `turnspec bench soak` (Makefile: `make stress`, `make soak`).

stress: a fresh `turnspec serve` per phase: the fuzzer (--messages hostile messages), the
disconnect storm (--storm-clients), then overload at --overload-factor x capacity on a server
with --overload-running/--overload-queue. Each phase ends with a normal turn and an idle
check. Prints the table of docs/reliability.md and writes JSON. soak: --minutes of cycles.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
from datetime import date
from typing import Any

from turnspec.benchmarks.stress.fuzz import Fuzzer
from turnspec.benchmarks.stress.hostile import cases
from turnspec.benchmarks.stress.overload import run_overload
from turnspec.benchmarks.stress.server_proc import ServerProcess
from turnspec.benchmarks.stress.soak import run_soak
from turnspec.benchmarks.stress.storm import run_storm
from turnspec.benchmarks.stress.turn import normal_turn

LIMIT = 64 << 10  # the campaign server's max message bytes: huge strings stay cheap to send


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("stress", help="fuzzer, disconnect storm and overload against "
                              "a live server (docs/reliability.md)")
    p.add_argument("--messages", type=int, default=10_000)
    p.add_argument("--storm-clients", type=int, default=200)
    p.add_argument("--overload-factor", type=float, default=3.0)
    p.add_argument("--overload-running", type=int, default=4)
    p.add_argument("--overload-queue", type=int, default=2)
    p.add_argument("--overload-seconds", type=float, default=60.0)
    p.add_argument("--slo-ttft-ms", type=float, default=3000.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                   help="one more `turnspec serve` argument (repeatable)")
    p.add_argument("--json", default="bench-stress.json")
    p.set_defaults(func=run_stress)
    s = subparsers.add_parser("soak", help="bounded soak: RSS, KV blocks and fds over time")
    s.add_argument("--minutes", type=float, default=5.0)
    s.add_argument("--server-arg", action="append", default=[], metavar="ARG")
    s.add_argument("--json", default="bench-soak.json")
    s.set_defaults(func=run_soak_cmd)


async def _after(srv: ServerProcess) -> dict[str, Any]:
    """The end of every phase: alive, healthy, a correct normal turn, then idle."""
    out: dict[str, Any] = {"alive": srv.alive, "healthy": srv.healthy()}
    out["normal_turn_ok"] = await normal_turn(srv.port) if out["healthy"] else False
    idle_s, m = srv.wait_idle(30.0)
    out["active_sequences"] = m.get("turnspec_engine_active_sequences")
    out["kv_used"] = m.get("turnspec_engine_used_kv_blocks")
    return out


async def _campaign(args: argparse.Namespace) -> dict[str, Any]:
    rec: dict[str, Any] = {"bench": "stress", "date": date.today().isoformat(),
                           "host": platform.node(), "cores": os.cpu_count(),
                           "args": {k: v for k, v in vars(args).items() if k != "func"}}
    crashes = 0
    srv = ServerProcess(["--max-message-bytes", str(LIMIT), "--default-max-tokens", "16",
                         *args.server_arg]).start()
    try:
        fz = await Fuzzer("127.0.0.1", srv.port, srv.grpc_port).run(
            cases(args.messages, args.seed, LIMIT), concurrency=16)
        rec["fuzz"] = {**fz.as_dict(), "after": await _after(srv)}
        print(f"fuzz: {fz.messages} messages, {fz.bad} unanswered, {fz.clean_closes} clean "
              f"closes, {fz.seconds:.0f} s", flush=True)
        rss0 = srv.rss_mb()
        storm = await run_storm("127.0.0.1", srv.port, srv.grpc_port, args.storm_clients)
        back_s, m = srv.wait_idle(30.0)
        rec["storm"] = {**storm.as_dict(), "kv_back_s": round(back_s, 3),
                        "kv_leaked": m.get("turnspec_engine_used_kv_blocks"),
                        "active_left": m.get("turnspec_engine_active_sequences"),
                        "rss_mb": [round(rss0, 1), round(srv.rss_mb(), 1)],
                        "after": await _after(srv)}
        print(f"storm: {storm.clients} clients dropped in {storm.seconds:.1f} s, KV back in "
              f"{back_s:.3f} s", flush=True)
    finally:
        code = srv.stop()
        crashes += code != 0
        rec["campaign_server_exit"] = code
    srv = ServerProcess(["--max-running", str(args.overload_running), "--max-queue",
                         str(args.overload_queue), *args.server_arg]).start()
    try:
        ov = await run_overload(srv, running=args.overload_running,
                                queue=args.overload_queue, factor=args.overload_factor, seconds=args.overload_seconds,
                                slo_ttft_ms=args.slo_ttft_ms)
        rec["overload"] = {**ov.as_dict(), "after": await _after(srv)}
    finally:
        code = srv.stop()
        crashes += code != 0
        rec["overload_server_exit"] = code
    for phase in ("fuzz", "storm", "overload"):
        a = rec[phase]["after"]
        crashes += not (a["alive"] and a["healthy"])
    rec["crashes"] = crashes
    return rec


def table(rec: dict[str, Any]) -> list[tuple[str, str, str]]:
    fz, st, ov = rec["fuzz"], rec["storm"], rec["overload"]
    rej = ov["reject_ms_all"]
    per = ", ".join(f"{k} {v['p99']}" for k, v in ov["reject_ms"].items())
    lt = ov["loadtest"]
    rows = [
        ("messages tried (fuzzer)", ">= 10,000", f"{fz['messages']:,}"),
        ("unanswered messages", "0", str(fz["bad"])),
        ("crashes (server died, unhealthy, bad exit)", "0", str(rec["crashes"])),
        ("leaked KV blocks after the storm", "0",
         f"{st['kv_leaked']:.0f} ({st['clients']} clients)"),
        ("KV blocks all back after the last drop", "<= 1 s", f"{st['kv_back_s']:.3f} s"),
        ("rejection latency p99 (client-measured)", "<= 5 ms",
         f"{rej['p99']} ms (n={rej['n']}; {per})"),
        ("rejection latency p99 (server: receive -> refusal)", "<= 5 ms",
         ", ".join(f"{k} <= {v:g} ms" for k, v in ov["server_reject_p99_ms_at_most"].items()
                   if v is not None)),
        ("admitted p90 TTFT at "
         f"{ov['offered_turns_s'] / max(ov['capacity_turns_s'], 1e-9):.1f}x capacity",
         f"<= {lt['slo_ttft_ms']:g} ms (SLO)",
         f"{lt['ttft_ms']['p90']:.0f} ms ({lt['served']} served, {lt['refused']} refused)"),
        ("admission queue peak / RSS peak under overload", "bounded",
         f"{ov['queued_peak']:.0f} / {ov['rss_mb']['peak']} MB"),
        ("normal turn + 0 active sequences after each phase", "yes",
         "yes" if all(rec[p]["after"]["normal_turn_ok"] and rec[p]["after"]["active_sequences"]
                      == 0 for p in ("fuzz", "storm", "overload")) else "NO"),
    ]
    if "soak" in rec:
        rows.append(("RSS growth over the soak", "~0", f"{rec['soak']['rss_growth_mb']} MB"))
    return rows


def print_table(rows: list[tuple[str, str, str]]) -> None:
    print(f"{'measure':<52}{'goal':<22}result")
    for name, goal, value in rows:
        print(f"{name:<52}{goal:<22}{value}")


def run_stress(args: argparse.Namespace) -> int:
    rec = asyncio.run(_campaign(args))
    rec["table"] = table(rec)
    print_table(rec["table"])
    with open(args.json, "w") as f:
        json.dump(rec, f, indent=2)
    print(f"wrote {args.json}")
    return 0 if rec["crashes"] == 0 and rec["fuzz"]["bad"] == 0 else 1


def run_soak_cmd(args: argparse.Namespace) -> int:
    srv = ServerProcess(["--max-message-bytes", str(LIMIT), "--default-max-tokens", "16",
                         *args.server_arg]).start()
    try:
        res = asyncio.run(run_soak(srv, args.minutes, limit=LIMIT))
    finally:
        code = srv.stop()
    rec = {"bench": "soak", "date": date.today().isoformat(), "minutes": args.minutes,
           "server_exit": code, **res.as_dict()}
    print(f"RSS growth {rec['rss_growth_mb']} MB, fds growth {rec['fds_growth']}, KV blocks "
          f"held when idle (max) {rec['kv_used_max']}, unanswered {rec['bad']}, exit {code}")
    with open(args.json, "w") as f:
        json.dump(rec, f, indent=2)
    print(f"wrote {args.json}")
    return 0 if code == 0 and res.bad == 0 and not res.normal_turns_failed else 1
