"""Typed field readers and trace-context extraction for JSON wire bodies."""

from __future__ import annotations

import pytest

from turnspec.server.errors import ApiError
from turnspec.server.wire import (
    opt_bool,
    opt_int,
    opt_number,
    opt_stop,
    parse_json_object,
    trace_from,
)


def test_readers_accept_valid_values():
    body = {"t": 0.5, "n": 3, "b": True, "stop": "x"}
    assert opt_number(body, "t", 0, 2) == 0.5
    assert opt_int(body, "n", 1, 5) == 3
    assert opt_bool(body, "b", False) is True and opt_bool(body, "zz", True) is True
    assert opt_stop(body) == ("x",)
    assert opt_number(body, "missing", 0, 1) is None


@pytest.mark.parametrize("call,param", [
    (lambda: opt_number({"t": True}, "t", 0, 2), "t"),  # bools are not numbers
    (lambda: opt_number({"t": float("nan")}, "t", 0, 2), "t"),
    (lambda: opt_number({"t": 3}, "t", 0, 2), "t"),
    (lambda: opt_int({"n": 1.0}, "n", 1, 5), "n"),
    (lambda: opt_int({"n": 9}, "n", 1, 5, prefix="sampling."), "sampling.n"),
    (lambda: opt_bool({"b": "yes"}, "b", False), "b"),
    (lambda: opt_stop({"stop": ["a", ""]}), "stop"),
    (lambda: opt_stop({"stop": ["a"] * 5}), "stop"),
])
def test_readers_name_the_field(call, param):
    with pytest.raises(ApiError) as info:
        call()
    assert info.value.status == 400 and info.value.param == param
    assert "expected" in info.value.message


def test_parse_json_object():
    assert parse_json_object(b'{"a": 1}') == {"a": 1}
    for raw in (b"{", b"[1]", b"\xff"):
        with pytest.raises(ApiError):
            parse_json_object(raw)


def test_trace_from_prefers_earlier_sources():
    per_turn = {"traceparent": "00-aaa-01", "other": "x"}
    conn = {"traceparent": "00-bbb-01", "tracestate": "k=v"}
    assert trace_from(per_turn, conn) == {"traceparent": "00-aaa-01", "tracestate": "k=v"}
    assert trace_from({}, None) is None
