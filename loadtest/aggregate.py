"""A run's records -> the result dict (what the JSON holds and the table prints).

Which turns count where: errors count only in `requests`; a barged-in turn counts for TTFT,
TTFS, tool-call latency, ITL (up to its cancel) and cancel-to-stop, never for E2E, TPOT, the
server parts or the breakdown (it was cut on purpose).
"""

from __future__ import annotations

import os
import platform
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from turnspec.loadtest.record import RequestRecord
from turnspec.loadtest.run_config import RunResult
from turnspec.loadtest.stats import (
    HOST_PARTS,
    PERCENTILES,
    Slo,
    breakdown_row,
    goodput,
    host_split,
    mean_itl,
    per_user_tok_s,
    server_parts,
    summarize,
    tpot,
    wire_times,
)

SCHEMA = 1
MAX_GAP_SAMPLES = 50_000  # pooled ITL gaps kept for the CDF plot (evenly thinned beyond)
# SGLang's way in and its first token's way back, reported alike by turnspec's SGLang engine
# and (from SGLang's own stamps) by SGLang's /generate: the like-for-like part of the hand-off
ENGINE_SPANS = ("engine_in_ms", "first_back_ms")
OPTIONAL = ("ttfs_ms", "tool_call_ms", "cancel_to_stop_ms", "uplink_ms", "downlink_ms",
            *(f"server_host_{k}" for k in HOST_PARTS), *(f"server_{k}" for k in ENGINE_SPANS))
OWN_WORK_CPU = 0.4  # --burn-loop-ms 50 shows ~0.55; a run starved by a local server ~0.01-0.05
BAND = 0.025  # the breakdown row at p averages the turns within +-2.5% of ranks around p


def error_type(rec: RequestRecord) -> str:
    err = rec.error or {}
    if err.get("code"):
        return str(err["code"])
    return f"http_{err['status']}" if err.get("status") else "error"


def metrics(records: Sequence[RequestRecord], loopback: bool) -> dict[str, dict[str, Any]]:
    ok = [r for r in records if r.ok]
    full = [r for r in ok if not r.cancelled]
    parts = [p for p in (server_parts(r) for r in full) if p is not None]
    rows = [x for x in (breakdown_row(r) for r in full) if x is not None]
    hosts = [h for h in (host_split(r) for r in full) if h is not None]
    m = {
        "ttft_ms": summarize(r.ttft_ms for r in ok),
        "ttfs_ms": summarize(r.ttfs_ms for r in ok),
        "tool_call_ms": summarize(r.tool_call_ms for r in ok),
        "itl_ms": summarize(g for r in ok for g in r.itl_ms),
        "tpot_ms": summarize(tpot(r) for r in full),
        "e2e_ms": summarize(r.e2e_ms for r in full),
        "output_tokens": summarize(r.output_tokens for r in full),
        "per_user_tok_s": summarize(per_user_tok_s(r) for r in full),
        "rtt_ms": summarize(r.rtt_ms for r in records),
        "server_ttft_ms": summarize(r.timing.get("server_ttft_ms") for r in full),
        "server_e2e_ms": summarize(p["server_e2e_ms"] for p in parts),
        "server_queue_ms": summarize(p["queue_ms"] for p in parts),
        "server_prefill_ms": summarize(p["prefill_ms"] for p in parts),
        "server_decode_ms": summarize(p["decode_ms"] for p in parts),
        "server_host_overhead_ms": summarize(p["host_overhead_ms"] for p in parts),
        **{f"server_host_{k}": summarize(h[k] for h in hosts) for k in HOST_PARTS},
        **{f"server_{k}": summarize(r.timing.get(k) for r in full) for k in ENGINE_SPANS},
        "tau": summarize(r.tau for r in full),
        "server_step_ms": summarize(r.step_ms for r in full),
        "residual_ms": summarize(x["residual_ms"] for x in rows),
        "prompt_tokens": summarize(r.timing.get("prompt_tokens") for r in full),
        "cached_tokens": summarize(r.timing.get("cached_tokens") for r in full),
        "cancel_to_stop_ms": summarize(r.cancel_to_stop_ms for r in ok),
    }
    if loopback:  # one clock: one-way times from the server's timestamps are real
        wires = [wire_times(r) for r in full]
        m["uplink_ms"] = summarize(w[0] for w in wires)
        m["downlink_ms"] = summarize(w[1] for w in wires)
    return {k: v for k, v in m.items() if k not in OPTIONAL or v["n"]}


def breakdown(records: Sequence[RequestRecord]) -> dict[str, dict[str, float] | None]:
    """Per percentile of client E2E: the mean RTT, host overhead, queue, prefill, decode and
    residual of the turns ranked within +-BAND of that percentile (means add up, so
    e2e = rtt + host + queue + prefill + decode + residual holds in every row)."""
    rows = sorted((x for x in (breakdown_row(r) for r in records) if x is not None),
                  key=lambda x: x["e2e_ms"])
    out: dict[str, dict[str, float] | None] = {}
    n = len(rows)
    for q in PERCENTILES:
        if not rows:
            out[f"p{q}"] = None
            continue
        center, half = round(q / 100 * (n - 1)), int(BAND * n)
        band = rows[max(0, center - half): center + half + 1]
        row = {k: sum(x[k] for x in band) / len(band) for k in band[0]}
        row["turns"] = len(band)
        out[f"p{q}"] = row
    return out


def saturation(run: RunResult, threshold_ms: float) -> dict[str, Any]:
    loop, arrivals = summarize(run.loop_lag_ms), summarize(run.arrival_lag_ms)
    reasons = []
    if loop["p99"] is not None and loop["p99"] > threshold_ms:
        reasons.append(f"event-loop lag p99 {loop['p99']:.1f} ms > {threshold_ms:g} ms")
    if arrivals["p99"] is not None and arrivals["p99"] > threshold_ms:
        reasons.append(f"open-loop arrivals late: lag p99 {arrivals['p99']:.1f} ms > "
                       f"{threshold_ms:g} ms")
    cause = None
    if reasons:
        cpu = run.client_cpu_util
        # A loop blocked by its own work burns CPU while it lags; a starved one barely runs.
        cause = (f"the client's own work blocks its event loop (it used {cpu:.0%} of a core)"
                 if cpu >= OWN_WORK_CPU else
                 f"the client got too little CPU: other processes took it (it used {cpu:.0%} "
                 "of a core)")
    return {"client_bound": bool(reasons), "reasons": reasons, "cause": cause,
            "threshold_ms": threshold_ms, "loop_lag_ms": loop, "arrival_lag_ms": arrivals,
            "cap_wait_ms": summarize(run.cap_wait_ms), "client_cpu_util": run.client_cpu_util}


def build_result(run: RunResult, *, url: str, transport: str, loopback: bool,
                 workload: str, load: dict[str, Any], args: dict[str, Any],
                 workload_errors: Sequence[str] = (), slo: Slo | None = None,
                 saturation_ms: float = 10.0) -> dict[str, Any]:
    recs = run.records
    ok = [r for r in recs if r.ok]
    by_type = Counter(error_type(r) for r in recs if not r.ok)
    if workload_errors:
        by_type["workload_error"] += len(workload_errors)
    errors = sum(by_type.values())
    dur = run.wall_s
    out_tokens = sum(r.output_tokens or 0 for r in ok)
    result: dict[str, Any] = {
        "schema": SCHEMA, "tool": "turnspec loadtest",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(run.started_unix)),
        "target": {"url": url, "transport": transport, "loopback": loopback},
        "workload": workload, "load": load, "args": args,
        "requests": {"ok": len(ok), "errors": errors, "total": len(recs) + len(workload_errors),
                     "barged_in": sum(r.cancelled for r in ok), "unfinished": run.unfinished,
                     "ws_resyncs": sum(r.resync for r in recs),
                     "error_rate": errors / (len(ok) + errors) if ok or errors else 0.0,
                     "errors_by_type": dict(by_type.most_common()),
                     "error_examples": _examples(recs), "workload_errors": list(workload_errors),
                     "warmup": {"ok": sum(r.ok for r in run.warmup_records),
                                "total": len(run.warmup_records)}},
        "throughput": {"duration_s": dur, "requests_per_s": len(ok) / dur if dur else None,
                       "output_tokens_per_s": out_tokens / dur if dur else None,
                       "tau": pooled_tau(ok)},
        "metrics": metrics(recs, loopback),
        "breakdown": breakdown(recs),
        "goodput": goodput(recs, slo, dur) if slo is not None else None,
        "saturation": saturation(run, saturation_ms),
        "notes": list(run.notes),
        "client": {"host": platform.node(), "cpus": os.cpu_count(),
                   "python": platform.python_version()},
        "samples": samples(recs),
    }
    return result


def pooled_tau(recs: Sequence[RequestRecord]) -> float | None:
    """Tokens committed per verify step over all the turns (τ as the engine counts it); the
    `tau` metric summarises each turn's own, which weighs a short turn like a long one."""
    counts = [c for c in (r.spec_counts for r in recs) if c is not None]
    steps = sum(s for _, s in counts)
    return sum(c for c, _ in counts) / steps if steps else None


def _examples(recs: Sequence[RequestRecord]) -> dict[str, str]:
    """The first message of each error type, so a report says what went wrong."""
    out: dict[str, str] = {}
    for r in recs:
        if not r.ok:
            out.setdefault(error_type(r), str((r.error or {}).get("message", ""))[:300])
    return out


def samples(recs: Sequence[RequestRecord]) -> dict[str, list[float]]:
    """Per-turn values (ms), for `loadtest compare`'s significance test and the plots."""
    ok = [r for r in recs if r.ok]
    full = [r for r in ok if not r.cancelled]

    def clean(xs: Any) -> list[float]:
        return [round(float(x), 3) for x in xs if x is not None]

    return {"ttft_ms": clean(r.ttft_ms for r in ok), "ttfs_ms": clean(r.ttfs_ms for r in ok),
            "tool_call_ms": clean(r.tool_call_ms for r in ok),
            "itl_ms": clean(mean_itl(r) for r in ok), "tpot_ms": clean(tpot(r) for r in full),
            "e2e_ms": clean(r.e2e_ms for r in full), "tau": clean(r.tau for r in full),
            "itl_all_ms": _thinned(clean(g for r in ok for g in r.itl_ms))}


def _thinned(xs: list[float]) -> list[float]:
    step = -(-len(xs) // MAX_GAP_SAMPLES)
    return xs[::step] if step > 1 else xs
