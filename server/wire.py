"""Typed field readers for JSON request bodies: each raises a 400 `ApiError` that names the
field (`param`) and says what type/value was expected. Used by the HTTP and WS transports."""

from __future__ import annotations

import json
import math
from typing import Any

from turnspec.server.errors import ApiError, invalid

_MISSING = object()


def parse_json_object(raw: str | bytes, what: str = "request body") -> dict[str, Any]:
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise invalid(f"{what}: expected a JSON object, could not parse it ({e})") from None
    except RecursionError:  # json's C decoder recurses per nesting level
        raise invalid(f"{what}: expected a JSON object, got one nested too deeply to parse",
                      code="nesting_too_deep") from None
    if not isinstance(obj, dict):
        raise invalid(f"{what}: expected a JSON object, got {type(obj).__name__}")
    return obj


def _type_name(v: Any) -> str:
    return "null" if v is None else type(v).__name__


def opt_number(body: dict[str, Any], key: str, lo: float, hi: float, *,
               prefix: str = "") -> float | None:
    v = body.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise invalid(f"{prefix}{key}: expected a number in [{lo:g}, {hi:g}], got "
                      f"{_type_name(v)} {v!r}", param=prefix + key)
    if not lo <= v <= hi:
        raise invalid(f"{prefix}{key}: expected a number in [{lo:g}, {hi:g}], got {v}",
                      param=prefix + key)
    return float(v)


def opt_int(body: dict[str, Any], key: str, lo: int, hi: int, *,
            prefix: str = "") -> int | None:
    v = body.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise invalid(f"{prefix}{key}: expected an integer in [{lo}, {hi}], got "
                      f"{_type_name(v)} {v!r}", param=prefix + key)
    if not lo <= v <= hi:
        raise invalid(f"{prefix}{key}: expected an integer in [{lo}, {hi}], got {v}",
                      param=prefix + key)
    return v


def opt_str(body: dict[str, Any], key: str, *, prefix: str = "") -> str | None:
    v = body.get(key)
    if v is None:
        return None
    if not isinstance(v, str):
        raise invalid(f"{prefix}{key}: expected a string, got {_type_name(v)}",
                      param=prefix + key)
    return v


def opt_bool(body: dict[str, Any], key: str, default: bool, *, prefix: str = "") -> bool:
    v = body.get(key)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise invalid(f"{prefix}{key}: expected true or false, got {_type_name(v)}",
                      param=prefix + key)
    return v


def opt_list(body: dict[str, Any], key: str, *, prefix: str = "") -> list[Any] | None:
    v = body.get(key)
    if v is None:
        return None
    if not isinstance(v, list):
        raise invalid(f"{prefix}{key}: expected an array, got {_type_name(v)}",
                      param=prefix + key)
    return v


def opt_stop(body: dict[str, Any], key: str = "stop") -> tuple[str, ...]:
    """OpenAI `stop`: a string or up to 4 non-empty strings."""
    v = body.get(key)
    if v is None:
        return ()
    if isinstance(v, str):
        v = [v]
    if (not isinstance(v, list) or len(v) > 4
            or not all(isinstance(s, str) and s for s in v)):
        raise invalid(f"{key}: expected a non-empty string or an array of up to 4 of them, "
                      f"got {v!r}", param=key)
    return tuple(v)


def opt_dict(body: dict[str, Any], key: str, *, prefix: str = "") -> dict[str, Any] | None:
    v = body.get(key)
    if v is None:
        return None
    if not isinstance(v, dict):
        raise invalid(f"{prefix}{key}: expected an object, got {_type_name(v)}",
                      param=prefix + key)
    return v


TRACE_KEYS = ("traceparent", "tracestate")


def trace_from(*sources: Any) -> dict[str, str] | None:
    """W3C trace context from header-like mappings; earlier sources win per key."""
    out: dict[str, str] = {}
    for src in reversed(sources):
        if src:
            out.update({k: v for k in TRACE_KEYS if isinstance(v := src.get(k), str)})
    return out or None


def dumps(obj: Any) -> str:
    """Compact JSON for the wire (no spaces: per-token frames stay small)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def error_payload(err: ApiError) -> dict[str, Any]:
    return {"error": err.body()}


__all__ = ["ApiError", "dumps", "error_payload", "opt_bool", "opt_dict", "opt_int", "opt_list",
           "opt_number", "opt_stop", "opt_str", "parse_json_object"]
