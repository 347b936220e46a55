"""SGLang's `meta_info` on a request's last chunk as our final Delta: finish reason, Timing
(queue, prefill and decode from its scheduler's timestamps, which `enable_metrics` turns on)
and SpecStats (verify steps, accepted drafts)."""

from __future__ import annotations

from typing import Any

from turnspec.engine.protocol import Delta, SpecStats, Timing

_FINISH = {"stop": "stop", "length": "length", "abort": "abort"}


def final_delta(delta: Delta, meta: dict[str, Any], timing: Timing, t0: float,
                t_first: float | None, now: float) -> None:
    """Fill the final delta from SGLang's meta_info: finish reason, timing, spec stats."""
    fin = meta.get("finish_reason")
    kind = fin.get("type") if isinstance(fin, dict) else fin
    delta.finished = True
    delta.finish_reason = _FINISH.get(str(kind), "error")
    if delta.finish_reason == "error":
        delta.error = f"sglang finished with {fin!r}"
    first = t_first or now
    queue = float(meta.get("queue_time") or 0.0) * 1000.0
    entry, prefilled = meta.get("forward_entry_time"), meta.get("prefill_finished_time")
    finished = meta.get("request_finished_ts")
    timing.queue_ms = max(queue, 0.0)
    timing.prefill_ms = max((prefilled - entry) * 1000.0 if entry and prefilled
                            else (first - t0) * 1000.0 - timing.queue_ms, 0.0)
    timing.decode_ms = max((finished - prefilled) * 1000.0 if finished and prefilled
                           else (now - first) * 1000.0, 0.0)
    timing.first_token_ms = (first - t0) * 1000.0
    if entry and prefilled and timing.received_unix_ms:  # the hand-off's two halves
        called = timing.received_unix_ms / 1000.0  # t0 on SGLang's wall clock
        timing.engine_in_ms = (entry - called) * 1000.0 - queue  # to the scheduler queue
        timing.first_back_ms = (called + (first - t0) - prefilled) * 1000.0
    timing.cached_tokens = int(meta.get("cached_tokens") or 0)
    timing.prefill_tokens = max(timing.prompt_tokens - timing.cached_tokens, 0)
    timing.completion_tokens = int(meta.get("completion_tokens") or 0)
    delta.timing = timing
    steps = int(meta.get("spec_verify_ct") or 0)
    if steps:
        committed = timing.completion_tokens
        delta.spec = SpecStats(verify_steps=steps, committed_tokens=committed,
                               accepted_tokens=int(meta.get("spec_num_correct_drafts")
                                                   or max(committed - steps, 0)))
