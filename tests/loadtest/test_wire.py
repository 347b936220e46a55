"""The network part of an RTT probe: the probe's round trip less the server's own time on it,
read from a turnspec pong or a `Server-Timing` header."""

from __future__ import annotations

import pytest

from turnspec.loadtest.wire import net_rtt_ms, pong_server_ms, server_timing_ms


def test_net_rtt_subtracts_what_the_server_held():
    assert net_rtt_ms(5.0, 3.75) == 1.25
    assert net_rtt_ms(5.0, None) == 5.0     # a server that does not say: the whole probe
    assert net_rtt_ms(5.0, -1.0) == 5.0     # nonsense from a server is not subtracted
    assert net_rtt_ms(1.0, 1.5) == 0.0      # clock granularity never makes it negative


def test_pong_server_time_from_its_arrival_and_send_stamps():
    pong = {"type": "pong", "turnspec": {"received_us": 1_000_000, "t_us": 1_002_250}}
    assert pong_server_ms(pong) == 2.25
    assert pong_server_ms({"type": "pong", "turnspec": {"t_us": 5}}) is None
    assert pong_server_ms({"type": "error"}) is None


@pytest.mark.parametrize("header, want", [
    ("turnspec;dur=0.731", 0.731),
    ('db;dur=53, turnspec;desc="held";dur="1.5"', 1.5),
    ("turnspec", None),
    ("turnspec;dur=abc", None),
    ("app;dur=2.0", None),
    (None, None),
])
def test_server_timing_header(header, want):
    assert server_timing_ms(header) == want
