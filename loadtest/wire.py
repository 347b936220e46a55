"""What the three clients share: auth headers, the server's event timestamps, elapsed ms, and
the network part of an RTT probe."""

from __future__ import annotations

import time
from typing import Any

INCOMPLETE = {"code": "incomplete_stream", "message": "the stream ended without its final event"}


def auth_headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def server_t_us(event: dict[str, Any]) -> int:
    """The server's send time of an event or chunk (`turnspec.t_us`), 0 when absent."""
    block = event.get("turnspec")
    return int(block.get("t_us") or 0) if isinstance(block, dict) else 0


def ms_since(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0


def net_rtt_ms(probe_ms: float, server_ms: float | None) -> float:
    """A probe's round trip less the time the server says it held the probe (NTP's
    `(t4 - t1) - (t3 - t2)`): what the network and the client took. Without a server figure,
    the whole probe."""
    if server_ms is None or server_ms < 0:
        return probe_ms
    return max(probe_ms - server_ms, 0.0)


def pong_server_ms(pong: dict[str, Any]) -> float | None:
    """A turnspec `pong`'s time on the server: its `received_us` (the ping's arrival) to its
    `t_us`; None for a server that does not say."""
    block = pong.get("turnspec")
    if not isinstance(block, dict) or not block.get("received_us") or not block.get("t_us"):
        return None
    return (int(block["t_us"]) - int(block["received_us"])) / 1000.0


def server_timing_ms(header: str | None, name: str = "turnspec") -> float | None:
    """`dur` of the `name` metric in a `Server-Timing` header (W3C: `a;dur=1.2, b;desc=x`);
    None when absent or malformed."""
    for metric in (header or "").split(","):
        fields = [f.strip() for f in metric.split(";")]
        if fields[0] != name:
            continue
        for f in fields[1:]:
            key, _, value = f.partition("=")
            if key.strip() == "dur":
                try:
                    return float(value.strip().strip('"'))
                except ValueError:
                    return None
    return None
