"""Metrics from the per-turn records, apart from printing (docs/loadtest.md defines them).

Percentiles interpolate linearly between the closest ranks: for sorted x_0..x_{n-1},
p = x_lo + (x_hi - x_lo) * frac with position q/100 * (n - 1) (numpy's default "linear",
Hyndman-Fan type 7; what vLLM, sglang and AIPerf report), so p50 of [1, 2, 3, 4] is 2.5.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from turnspec.loadtest.record import RequestRecord

PERCENTILES = (50, 90, 99)
BREAKDOWN_PARTS = ("rtt_ms", "host_overhead_ms", "queue_ms", "prefill_ms", "decode_ms")
# the server's host overhead in parts that add up to it (host_split)
HOST_PARTS = ("receive_ms", "render_ms", "render_wait_ms", "grammar_ms", "handoff_ms",
              "delivery_ms")


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile: expected q in [0, 100], got {q}")
    xs = sorted(values)
    pos = q / 100.0 * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summarize(values: Iterable[float | None]) -> dict[str, float | int | None]:
    """{n, p50, p90, p99, mean, min, max}; None values are left out, all None when empty."""
    xs = [float(v) for v in values if v is not None]
    out: dict[str, float | int | None] = {"n": len(xs)}
    for q in PERCENTILES:
        out[f"p{q}"] = percentile(xs, q) if xs else None
    out["mean"] = sum(xs) / len(xs) if xs else None
    out["min"] = min(xs) if xs else None
    out["max"] = max(xs) if xs else None
    return out


# -- per turn ----------------------------------------------------------------------------------

def mean_itl(rec: RequestRecord) -> float | None:
    """The turn's mean gap between content chunks (what --slo itl: judges)."""
    c = rec.chunk_ms
    return (c[-1] - c[0]) / (len(c) - 1) if len(c) > 1 else None


def tpot(rec: RequestRecord) -> float | None:
    """(E2E - TTFT) / (output tokens - 1), output tokens from the server's usage."""
    n = rec.output_tokens
    if rec.e2e_ms is None or rec.ttft_ms is None or n is None or n < 2:
        return None
    return (rec.e2e_ms - rec.ttft_ms) / (n - 1)


def server_parts(rec: RequestRecord) -> dict[str, float] | None:
    """queue, prefill, decode and host overhead (= server E2E minus the other three: parse,
    template, tokenize, delivery, sending), from the server's timing block."""
    t = rec.timing
    if t.get("server_e2e_ms") is None or t.get("decode_ms") is None:
        return None
    parts = {k: float(t.get(k) or 0.0) for k in ("queue_ms", "prefill_ms", "decode_ms")}
    parts["server_e2e_ms"] = float(t["server_e2e_ms"])
    parts["host_overhead_ms"] = parts["server_e2e_ms"] - sum(
        parts[k] for k in ("queue_ms", "prefill_ms", "decode_ms"))
    return parts


def host_split(rec: RequestRecord) -> dict[str, float] | None:
    """The server's host overhead in HOST_PARTS, which add up to it: the server's own steps
    before the engine (receive, template, the template's wait on a tokenizing thread, grammar:
    the timing block's hops); the engine's hand-off, its own time to the first token less its
    queue and prefill (0 on the embedded engine; on SGLang the hops between the server's
    process, the scheduler and the detokenizer); and delivery, the rest (tokens through the
    server to the socket, the last chunk's trip). None without a timing block that has the
    engine's time to first token."""
    parts, t = server_parts(rec), rec.timing
    if parts is None or t.get("first_token_ms") is None:
        return None
    out = {k: float(t.get(k) or 0.0) for k in HOST_PARTS[:4]}  # the timing block's own hops
    out["render_ms"] -= out["render_wait_ms"]  # the block's render_ms is the whole step
    out["handoff_ms"] = max(float(t["first_token_ms"]) - float(t.get("engine_queue_ms") or 0.0)
                            - parts["prefill_ms"], 0.0)
    out["delivery_ms"] = parts["host_overhead_ms"] - sum(out.values())
    return out


def breakdown_row(rec: RequestRecord) -> dict[str, float] | None:
    """Client E2E split as RTT + host overhead + queue + prefill + decode, plus the residual
    (E2E minus that sum). None for turns without E2E or a timing block (errors, barge-ins)."""
    parts = server_parts(rec)
    if parts is None or rec.e2e_ms is None or not rec.ok or rec.cancelled:
        return None
    row = {"e2e_ms": rec.e2e_ms, "rtt_ms": rec.rtt_ms or 0.0, **parts}
    row["residual_ms"] = rec.e2e_ms - sum(row[k] for k in BREAKDOWN_PARTS)
    return row


def wire_times(rec: RequestRecord) -> tuple[float | None, float | None]:
    """(uplink, downlink) ms from the server's clock: send -> server received, server's last
    event -> client end. Real only when client and server share a clock (loopback)."""
    t = rec.timing
    received_us = t.get("server_received_unix_us") or (
        t["server_received_unix_ms"] * 1000.0 if t.get("server_received_unix_ms") else None)
    up = (received_us - rec.send_unix_us) / 1000.0 if received_us and rec.send_unix_us else None
    down = None
    if rec.end_server_us and rec.e2e_ms is not None:
        down = rec.send_unix_us / 1000.0 + rec.e2e_ms - rec.end_server_us / 1000.0
    return up, down


def per_user_tok_s(rec: RequestRecord) -> float | None:
    """Decode speed the user sees: 1000 / TPOT."""
    x = tpot(rec)
    return 1000.0 / x if x else None


# -- goodput -----------------------------------------------------------------------------------

@dataclass(slots=True, frozen=True)
class Slo:
    """`--slo ttft:MS,ttfs:MS,itl:MS,e2e:MS` (any subset). A turn is good when it succeeded,
    was not barged in, and meets every bound: TTFT; time to first sentence (a reply without a
    sentence end counts its E2E; a tool-call-only turn has none to judge); its mean ITL; E2E."""

    ttft_ms: float | None = None
    ttfs_ms: float | None = None
    itl_ms: float | None = None
    e2e_ms: float | None = None

    def __post_init__(self) -> None:
        for k in ("ttft_ms", "ttfs_ms", "itl_ms", "e2e_ms"):
            v = getattr(self, k)
            if v is not None and not v > 0:
                raise ValueError(f"--slo {k[:-3]}: expected milliseconds > 0, got {v}")

    @classmethod
    def parse(cls, text: str | None) -> Slo | None:
        if not text:
            return None
        bounds: dict[str, float] = {}
        for part in text.split(","):
            key, _, value = part.partition(":")
            if key not in ("ttft", "ttfs", "itl", "e2e") or not value:
                raise ValueError(f"--slo {text!r}: expected KEY:MS pairs with KEY in ttft, ttfs,"
                                 f" itl, e2e, e.g. ttft:300,itl:50; got {part!r}")
            try:
                bounds[f"{key}_ms"] = float(value)
            except ValueError:
                raise ValueError(f"--slo {part!r}: expected a number of milliseconds") from None
        return cls(**bounds)

    def met(self, rec: RequestRecord) -> bool:
        if not rec.ok or rec.cancelled:
            return False
        ttfs = rec.ttfs_ms if rec.ttfs_ms is not None else (rec.e2e_ms if rec.text else None)
        itl = mean_itl(rec)
        return all(bound is None or value is None or value <= bound for bound, value in (
            (self.ttft_ms, rec.ttft_ms), (self.ttfs_ms, ttfs), (self.itl_ms, itl),
            (self.e2e_ms, rec.e2e_ms)))

    def as_dict(self) -> dict[str, float | None]:
        return {"ttft_ms": self.ttft_ms, "ttfs_ms": self.ttfs_ms, "itl_ms": self.itl_ms,
                "e2e_ms": self.e2e_ms}


def goodput(records: Sequence[RequestRecord], slo: Slo, duration_s: float) -> dict[str, Any]:
    """Good turns, their share of the turns not barged in (errors count as not good), and
    good turns per second of the measured window."""
    eligible = [r for r in records if not r.cancelled]
    good = sum(slo.met(r) for r in eligible)
    return {"slo": slo.as_dict(), "good": good, "turns": len(eligible),
            "fraction": good / len(eligible) if eligible else None,
            "per_s": good / duration_s if duration_s > 0 else None}
