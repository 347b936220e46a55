"""What the three clients share: auth headers, the server's event timestamps, elapsed ms."""

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
