"""Scheduler admission: prefill-first by default, held back by admit_min_free (offline)."""

from __future__ import annotations

import pytest

from turnspec.engine.local.block_manager import BlockManager
from turnspec.engine.local.config import LocalEngineConfig
from turnspec.engine.local.scheduler import Scheduler
from turnspec.engine.local.sequence import Sequence
from turnspec.engine.protocol import GenerateRequest, SamplingParams


def _seq(i: int) -> Sequence:
    req = GenerateRequest(f"r{i}", [5, 6, 7, i], SamplingParams(max_tokens=8))
    return Sequence(request=req, detok=None, stop_ids=frozenset(), token_ids=[5, 6, 7, i],
                    prompt_len=4)


def _step_kinds(sched: Scheduler, finish_after: dict[str, int], steps: int) -> list[str]:
    """Run `steps` schedules; a running sequence finishes after finish_after[id] decode steps."""
    kinds, decoded = [], dict.fromkeys(finish_after, 0)
    for _ in range(steps):
        batch = sched.schedule()
        if batch is None:
            break
        kinds.append(f"{batch.kind}:{len(batch.seqs)}")
        for s in batch.seqs:
            s.num_computed = len(s.token_ids) - 1 if batch.kind == "prefill" else s.num_computed + 1
            if batch.kind == "decode":
                s.token_ids.append(1)
                decoded[s.request_id] += 1
                if decoded[s.request_id] >= finish_after[s.request_id]:
                    sched.finish(s)
    return kinds


@pytest.mark.parametrize("min_free, want", [
    # one row finishes per decode step: prefill-first refills each freed slot at once ...
    (1, ["prefill:4", "decode:4", "prefill:1", "decode:4", "prefill:1", "decode:4"]),
    # ... admit_min_free=2 lets decode run until two slots are free, then admits both
    (2, ["prefill:4", "decode:4", "decode:3", "prefill:2", "decode:4", "decode:3"]),
])
def test_admit_min_free_batches_admissions(min_free: int, want: list[str]) -> None:
    sched = Scheduler(BlockManager(64, 4), max_batch=4, max_prefill_tokens=1000,
                      spec_lookahead=0, admit_min_free=min_free)
    seqs = [_seq(i) for i in range(8)]
    for s in seqs:
        sched.add(s)
    finish_after = {s.request_id: 1 + i for i, s in enumerate(seqs)}    # r0 after 1 step, ...
    assert _step_kinds(sched, finish_after, len(want)) == want


def test_admit_min_free_admits_the_last_few_waiting() -> None:
    sched = Scheduler(BlockManager(64, 4), max_batch=4, max_prefill_tokens=1000,
                      spec_lookahead=0, admit_min_free=3)
    seqs = [_seq(i) for i in range(5)]
    for s in seqs:
        sched.add(s)
    # r0 finishes at once; one slot is free and one request waits: it is admitted, not held
    assert _step_kinds(sched, {s.request_id: 1 if i == 0 else 9 for i, s in enumerate(seqs)},
                       3) == ["prefill:4", "decode:4", "prefill:1"]


def test_admit_min_free_is_validated() -> None:
    with pytest.raises(ValueError, match="admit_min_free"):
        LocalEngineConfig(model_dir="x", max_batch=4, admit_min_free=5)
    with pytest.raises(ValueError, match="admit_min_free"):
        LocalEngineConfig(model_dir="x", admit_min_free=0)
