"""SGLang's meta_info as our final Delta (engine/sglang_meta.py)."""

from __future__ import annotations

import pytest

from turnspec.engine.protocol import Delta, Timing
from turnspec.engine.sglang_meta import final_delta


def test_meta_info_becomes_our_timing_and_spec_stats() -> None:
    """SGLang's meta_info (realtime seconds from its scheduler, as 0.5.17 reports them with
    enable_metrics) maps onto the engine's Timing and SpecStats."""
    meta = {"finish_reason": {"type": "length", "length": 32}, "prompt_tokens": 100,
            "cached_tokens": 64, "completion_tokens": 32, "queue_time": 0.002,
            "forward_entry_time": 1000.010, "prefill_finished_time": 1000.025,
            "request_finished_ts": 1000.125, "spec_verify_ct": 8,
            "spec_num_correct_drafts": 24, "spec_accept_length": 4.0}
    delta, timing = Delta("r", [1], "x"), Timing(prompt_tokens=100, accepted_at=5.0)
    final_delta(delta, meta, timing, t0=5.0, t_first=5.030, now=5.140)
    assert delta.finished and delta.finish_reason == "length"
    t = delta.timing
    assert t.queue_ms == pytest.approx(2.0) and t.prefill_ms == pytest.approx(15.0)
    assert t.decode_ms == pytest.approx(100.0) and t.first_token_ms == pytest.approx(30.0)
    assert (t.cached_tokens, t.prefill_tokens, t.completion_tokens) == (64, 36, 32)
    assert delta.spec.verify_steps == 8 and delta.spec.tau == 4.0
    assert delta.spec.accepted_tokens == 24
    assert t.engine_in_ms is None  # no wall-clock start, no split


def test_the_hand_off_splits_into_the_way_in_and_the_first_tokens_way_back() -> None:
    """Called at unix 1000.000 (perf 5.0): SGLang queued it at 1000.008 (entry 1000.010 less
    2 ms of queue), prefilled by 1000.025, and the first token reached us at perf 5.030, unix
    1000.030: 8 ms in, 5 ms back, together the first token's time less queue and prefill."""
    meta = {"finish_reason": {"type": "stop"}, "queue_time": 0.002,
            "forward_entry_time": 1000.010, "prefill_finished_time": 1000.025,
            "request_finished_ts": 1000.125}
    delta, timing = Delta("r", [1], "x"), Timing(received_unix_ms=1_000_000.0, accepted_at=5.0)
    final_delta(delta, meta, timing, t0=5.0, t_first=5.030, now=5.140)
    t = delta.timing
    assert t.engine_in_ms == pytest.approx(8.0) and t.first_back_ms == pytest.approx(5.0)
    assert t.engine_in_ms + t.first_back_ms == pytest.approx(
        t.first_token_ms - t.queue_ms - t.prefill_ms)
    aborted = Delta("r", [], "")
    final_delta(aborted, {"finish_reason": {"type": "abort"}}, Timing(), 0.0, None, 1.0)
    assert aborted.finish_reason == "abort" and aborted.spec is None
