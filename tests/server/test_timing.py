"""The timing block's parts (server/timing.py), unit level; the first-sentence rule it uses is
tests/tools_grammar/test_sentence.py."""

from __future__ import annotations

import pytest

from turnspec.engine.protocol import Timing
from turnspec.server.timing import TurnClock, stamp, timing_block


def test_the_four_parts_add_up_to_the_server_e2e() -> None:
    clock = TurnClock(received=100.0, received_unix_us=1_700_000_000_000_000)
    clock.hop("receive", 100.0, 100.0005)
    clock.hop("template", 100.001, 100.005)
    clock.hop("template_wait", 100.0045, 100.005)  # of it, on a tokenizing thread's hop
    clock.hop("grammar", 100.005, 100.0075)
    clock.hop("admission", 100.0075, 100.0175)
    clock.first_output, clock.first_sentence = 100.200, 100.350
    engine = Timing(queue_ms=5.0, prefill_ms=120.0, decode_ms=300.0, engine_host_ms=7.5,
                    prompt_tokens=40, cached_tokens=32, prefill_tokens=8, completion_tokens=20)
    block = timing_block(clock, engine)
    assert block["queue_ms"] == 15.0 and block["engine_queue_ms"] == 5.0  # admission + engine
    assert block["render_ms"] == 4.0 and block["receive_ms"] == 0.5
    assert block["render_wait_ms"] == 0.5
    assert block["grammar_ms"] == 2.5
    assert block["server_ttft_ms"] == 200.0 and block["ttfs_ms"] == 350.0
    assert block["tool_call_ms"] is None and block["engine_host_ms"] == 7.5
    stamp(block, clock, now=100.4567)
    assert block["server_e2e_ms"] == 456.7
    assert block["host_overhead_ms"] == pytest.approx(456.7 - 15.0 - 120.0 - 300.0, abs=1e-9)
    assert block["server_e2e_ms"] == pytest.approx(
        block["host_overhead_ms"] + block["queue_ms"] + block["prefill_ms"]
        + block["decode_ms"], abs=0.002)
