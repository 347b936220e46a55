"""`turnspec loadtest compare A.json B.json`: per metric the deltas B - A, with a note on
whether each p50/p90 delta is more than noise.

Significance: a seeded bootstrap over the runs' per-turn samples (2,000 resamples of each
run's turns, the percentile recomputed each time); a delta is "significant" when the 95%
interval of B - A excludes 0. ITL's samples are per-turn mean ITLs (gaps within a turn are
not independent, so the pooled gaps would overstate the certainty).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

ROWS = ("ttft_ms", "ttfs_ms", "tool_call_ms", "itl_ms", "tpot_ms", "e2e_ms", "rtt_ms",
        "server_queue_ms", "server_prefill_ms", "server_decode_ms", "server_host_overhead_ms",
        "residual_ms", "tau")
TESTED = ("p50", "p90")
RESAMPLES = 2000
MIN_SAMPLES = 10


def bootstrap_delta(a: list[float], b: list[float], q: float, seed: int = 0,
                    resamples: int = RESAMPLES) -> tuple[float, float]:
    """95% interval of percentile_q(B) - percentile_q(A) by resampling each run's turns."""
    rng = np.random.default_rng(seed)
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    da = np.percentile(rng.choice(xa, (resamples, xa.size)), q, axis=1)
    db = np.percentile(rng.choice(xb, (resamples, xb.size)), q, axis=1)
    lo, hi = np.percentile(db - da, [2.5, 97.5])
    return float(lo), float(hi)


def significance(a: list[float] | None, b: list[float] | None, q: float) -> str:
    if not a or not b or len(a) < MIN_SAMPLES or len(b) < MIN_SAMPLES:
        return f"too few turns (<{MIN_SAMPLES})"
    lo, hi = bootstrap_delta(a, b, q)
    verdict = "significant" if lo > 0 or hi < 0 else "noise"
    return f"{verdict} (95% CI {lo:+.2f}..{hi:+.2f})"


def _label(res: dict[str, Any]) -> str:
    load = res.get("load", {})
    how = (f"c={load.get('concurrency')}" if load.get("mode") == "closed"
           else f"rate={load.get('rate')}/s")
    return f"{res['target']['url']} {res.get('workload')} {how} {res.get('date', '')}"


def compare(a: dict[str, Any], b: dict[str, Any]) -> str:
    lines = [f"A: {_label(a)}", f"B: {_label(b)}", "",
             f"{'metric':<26}{'stat':>5}{'A':>11}{'B':>11}{'B-A':>11}{'B-A %':>8}  note"]
    sa, sb = a.get("samples", {}), b.get("samples", {})
    for key in ROWS:
        ma, mb = a["metrics"].get(key), b["metrics"].get(key)
        if not ma or not mb:
            continue
        for stat in ("p50", "p90", "p99"):
            va, vb = ma.get(stat), mb.get(stat)
            if va is None or vb is None:
                continue
            pct = f"{(vb - va) / va * 100:+7.1f}%" if va else f"{'-':>8}"
            note = ""
            if stat in TESTED and key in sa:
                note = significance(sa.get(key), sb.get(key), float(stat[1:]))
                note = f"per-turn mean ITL: {note}" if key == "itl_ms" else note
            lines.append(f"{key:<26}{stat:>5}{va:>11.2f}{vb:>11.2f}{vb - va:>+11.2f}{pct}  {note}")
    ta, tb = a["throughput"], b["throughput"]
    for key in ("requests_per_s", "output_tokens_per_s"):
        if ta.get(key) and tb.get(key):
            lines.append(f"{key:<26}{'':>5}{ta[key]:>11.2f}{tb[key]:>11.2f}"
                         f"{tb[key] - ta[key]:>+11.2f}{(tb[key] / ta[key] - 1) * 100:+7.1f}%")
    for name, res in (("A", a), ("B", b)):
        sat = res.get("saturation") or {}
        if sat.get("client_bound"):
            lines.append(f"warning: {name} was client-bound ({'; '.join(sat['reasons'])}): its "
                         "latencies include client delay")
        if res["requests"].get("errors"):
            lines.append(f"warning: {name} had {res['requests']['errors']} errors "
                         f"({res['requests']['errors_by_type']})")
    return "\n".join(lines)


def compare_files(path_a: str | Path, path_b: str | Path) -> str:
    runs = []
    for p in (path_a, path_b):
        try:
            res = json.loads(Path(p).read_text())
        except (OSError, ValueError) as e:
            raise ValueError(f"{p}: not a loadtest result JSON ({e})") from None
        if "metrics" not in res or "throughput" not in res:
            raise ValueError(f"{p}: expected a `turnspec loadtest --out` JSON (metrics, "
                             "throughput)")
        runs.append(res)
    return compare(*runs)
