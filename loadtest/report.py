"""The result for people (a fixed-width table) and machines (JSON, an appended JSONL history,
a per-turn CSV)."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from turnspec.loadtest.aggregate import error_type
from turnspec.loadtest.record import RequestRecord
from turnspec.loadtest.stats import breakdown_row, mean_itl, tpot

ROWS = (("ttft_ms", "TTFT"), ("ttfs_ms", "time to first sentence"),
        ("tool_call_ms", "tool call (args complete)"), ("itl_ms", "ITL"), ("tpot_ms", "TPOT"),
        ("e2e_ms", "E2E"), ("rtt_ms", "RTT (probe)"), ("server_ttft_ms", "server TTFT"),
        ("server_queue_ms", "server queue"), ("server_prefill_ms", "server prefill"),
        ("server_decode_ms", "server decode"), ("server_step_ms", "  a verify step"),
        ("server_host_overhead_ms", "server host overhead"),
        ("server_host_receive_ms", "  of it: receive"), ("server_host_render_ms", "  template"),
        ("server_host_render_wait_ms", "  template thread hop"),
        ("server_host_grammar_ms", "  grammar"), ("server_host_handoff_ms", "  engine hand-off"),
        ("server_host_delivery_ms", "  delivery"),
        ("server_engine_in_ms", "SGLang: way in"), ("server_first_back_ms", "  first token back"),
        ("server_e2e_ms", "server E2E"), ("residual_ms", "E2E residual"),
        ("uplink_ms", "uplink (server clock)"), ("downlink_ms", "downlink (server clock)"),
        ("cancel_to_stop_ms", "cancel -> stop"), ("output_tokens", "output tokens"),
        ("per_user_tok_s", "per-user tok/s"), ("tau", "tau (tokens/verify)"))
PARTS = ("e2e_ms", "rtt_ms", "host_overhead_ms", "queue_ms", "prefill_ms", "decode_ms",
         "residual_ms")


def _f(v: Any, width: int = 9) -> str:
    if v is None:
        return f"{'-':>{width}}"
    if isinstance(v, int):
        return f"{v:>{width}d}"
    return f"{v:>{width}.2f}" if abs(v) < 1e5 else f"{v:>{width}.3g}"


def format_table(res: dict[str, Any]) -> str:
    t, rq, tp, load = res["target"], res["requests"], res["throughput"], res["load"]
    mode = (f"closed loop, concurrency {load['concurrency']}" if load["mode"] == "closed" else
            f"open loop, {load['rate']:g} turns/s (burstiness {load['burstiness']:g}"
            + (f", max concurrency {load['max_concurrency']})" if load.get("max_concurrency")
               else ")"))
    lines = [f"turnspec loadtest  {t['url']}  workload {res['workload']}  {mode}",
             f"turns: {rq['ok']} ok, {rq['errors']} errors ({rq['error_rate']:.1%}), "
             f"{rq['barged_in']} barged in, {rq['unfinished']} unfinished, "
             f"{rq['ws_resyncs']} WS resyncs   window {tp['duration_s']:.1f} s   "
             f"{_f(tp['requests_per_s'], 0).strip()} turns/s   "
             f"{_f(tp['output_tokens_per_s'], 0).strip()} output tok/s"
             + (f"   tau {tp['tau']:.2f} (all turns)" if tp.get("tau") else "")]
    gp = res.get("goodput")
    if gp:
        slo = ",".join(f"{k[:-3]}:{v:g}" for k, v in gp["slo"].items() if v is not None)
        frac = "-" if gp["fraction"] is None else f"{gp['fraction']:.1%}"
        lines.append(f"goodput ({slo} ms): {gp['good']} of {gp['turns']} turns ({frac}), "
                     f"{_f(gp['per_s'], 0).strip()} good turns/s")
    lines += ["", f"{'metric (ms unless named)':<28}{'n':>7}" + "".join(
        f"{h:>9}" for h in ("p50", "p90", "p99", "mean", "max"))]
    m = res["metrics"]
    for key, label in ROWS:
        s = m.get(key)
        if s is not None:
            lines.append(f"{label:<28}{s['n']:>7d}" + "".join(
                _f(s[k]) for k in ("p50", "p90", "p99", "mean", "max")))
    lines += ["", "client E2E = RTT + host overhead + queue + prefill + decode + residual "
              "(mean of the turns around each E2E percentile)",
              f"{'pct':<6}" + "".join(f"{h:>10}" for h in
                                      ("e2e", "rtt", "host", "queue", "prefill", "decode",
                                       "residual"))]
    for q, row in res["breakdown"].items():
        cells = "".join(_f(row[k], 10) for k in PARTS) if row else "  (no complete turns)"
        lines.append(f"{q:<6}{cells}")
    lines += ["", _saturation_line(res["saturation"])]
    for kind, n in rq["errors_by_type"].items():
        lines.append(f"errors {kind}: {n}  e.g. {rq['error_examples'].get(kind, '')[:160]}")
    for e in rq["workload_errors"][:5]:
        lines.append(f"workload: {e}")
    for note in res["notes"]:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def _saturation_line(sat: dict[str, Any]) -> str:
    loop, arr = sat["loop_lag_ms"], sat["arrival_lag_ms"]
    lags = f"event-loop lag p99 {_f(loop['p99'], 0).strip()} ms"
    if arr["n"]:
        lags += f", arrival lag p99 {_f(arr['p99'], 0).strip()} ms"
    lags += f", client CPU {sat['client_cpu_util']:.0%} of a core"
    if not sat["client_bound"]:
        return f"client: not saturated ({lags})"
    return (f"CLIENT-BOUND: the client was the bottleneck, latencies include client delay: "
            f"{'; '.join(sat['reasons'])}; {sat['cause']}")


def write_json(res: dict[str, Any], path: str | Path) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(res, indent=1) + "\n")


def append_history(res: dict[str, Any], path: str | Path) -> None:
    """One line per run: args and results, without the per-turn samples."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    line = {k: v for k, v in res.items() if k != "samples"}
    with p.open("a", encoding="utf-8") as f:
        f.write(json.dumps(line, separators=(",", ":")) + "\n")


CSV_FIELDS = ("conversation_id", "turn", "kind", "transport", "ok", "error", "finish_reason",
              "ttft_ms", "ttfs_ms", "tool_call_ms", "e2e_ms", "tpot_ms", "itl_mean_ms",
              "itl_max_ms", "chunks", "output_tokens", "rtt_ms", "queue_ms", "prefill_ms",
              "decode_ms", "host_overhead_ms", "server_e2e_ms", "residual_ms", "tau",
              "barged_in", "cancel_to_stop_ms", "ws_resync", "arrival_lag_ms", "request_id")


def write_details(records: Sequence[RequestRecord], path: str | Path) -> None:
    """One CSV row per measured turn (--details)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, CSV_FIELDS)
        w.writeheader()
        for r in records:
            row = breakdown_row(r) or {}
            w.writerow({
                "conversation_id": r.conversation_id, "turn": r.turn, "kind": r.kind,
                "transport": r.transport, "ok": int(r.ok),
                "error": "" if r.ok else error_type(r), "finish_reason": r.finish_reason,
                "ttft_ms": r.ttft_ms, "ttfs_ms": r.ttfs_ms, "tool_call_ms": r.tool_call_ms,
                "e2e_ms": r.e2e_ms, "tpot_ms": tpot(r), "itl_mean_ms": mean_itl(r),
                "itl_max_ms": max(r.itl_ms) if r.itl_ms else None, "chunks": len(r.chunk_ms),
                "output_tokens": r.output_tokens, "rtt_ms": r.rtt_ms,
                **{k: row.get(k) for k in ("queue_ms", "prefill_ms", "decode_ms",
                                           "host_overhead_ms", "server_e2e_ms",
                                           "residual_ms")},
                "tau": r.tau, "barged_in": int(r.cancelled),
                "cancel_to_stop_ms": r.cancel_to_stop_ms, "ws_resync": int(r.resync),
                "arrival_lag_ms": r.arrival_lag_ms, "request_id": r.request_id})
