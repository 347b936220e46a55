"""A prefill's first token handed back before the next decode step is launched
(`TURNSPEC_SGLANG_EARLY_FIRST_TOKEN=N`, `turnspec serve --sglang-early-first-token N`).

SGLang's overlap scheduler launches batch k+1 before it processes batch k's result
(`Scheduler.event_loop_overlap`), so the first token of a prefill reaches its client only after
the host has launched the decode step that follows: a DFLASH step's draft, plan and verify, all
host work at low load. The longer that launch, the later the first token (docs/benchmarks.md:
generic TTFT at one stream rises from no speculation to stock DFLASH to the plugin's trees, whose
step the host launches more slowly).

With N > 0, a decode step of at most N rows that follows a prefill is not overlapped with it:
SGLang processes the prefill's result first, the path it takes itself between two prefills with
SGLANG_DISABLE_CONSECUTIVE_PREFILL_OVERLAP and before any step of a speculative algorithm that
cannot advance a grammar inside its verify (DFLASH can: under a grammar it advances the grammar
over the prefill's token mid-launch and still sends the token after). So the first token goes
out as soon as the prefill is done, and the decode step is launched after. What it costs: that
step no longer overlaps the prefill's GPU work (about the prefill's GPU time, once per new
request). Above N rows the boundary comes at most steps and that cost adds up, so they keep
SGLang's overlap.
"""

from __future__ import annotations

from typing import Any

from turnspec.engine.sglang_plugin.state import STATE


def after_prefill(batch: Any, last_batch: Any, rows: int) -> bool:
    """`batch` is a decode step of 1..`rows` rows right after `last_batch`, a prefill (not a
    verify, which SGLang also counts as an extend)."""
    if batch is None or last_batch is None or not batch.forward_mode.is_decode():
        return False
    if not last_batch.forward_mode.is_extend_without_speculative():
        return False
    return 0 < len(batch.reqs) <= rows


def around_disable_overlap(original: Any, scheduler: Any, batch: Any, last_batch: Any) -> bool:
    """AROUND Scheduler.is_disable_overlap_for_batch: SGLang's reasons, and the early first
    token's."""
    if original(scheduler, batch, last_batch):
        return True
    if after_prefill(batch, last_batch, STATE.config.early_rows):
        STATE.stats["early_first_tokens"] += 1
        return True
    return False
