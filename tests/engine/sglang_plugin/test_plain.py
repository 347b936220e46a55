"""Width "served" through the hooks as DFLASH's worker calls them, on the CPU: the pace sends a
decode step to plain decode where that has committed more a second (plain.step is replaced
here: it runs SGLang's own verify, so tests/engine/test_sglang_trees_cuda.py runs it on the GPU),
nothing is planned for a plain step, a prefill is left to DFLASH, and the wide steps' commits
reach the pace from their results."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from turnspec.engine.sglang_plugin import hooks, plain
from turnspec.engine.sglang_plugin.config import PluginConfig
from turnspec.engine.sglang_plugin.state import STATE
from turnspec.engine.spec.width import Pace


def batch(rows: int, extend: bool = False) -> SimpleNamespace:
    return SimpleNamespace(
        reqs=[SimpleNamespace(rid=f"r{i}", grammar=None) for i in range(rows)],
        forward_mode=SimpleNamespace(is_extend=lambda: extend, is_idle=lambda: False),
        is_extend_in_batch=False, has_grammar=False, req_pool_indices=torch.arange(rows, dtype=torch.int32))


def result(stride: int, counts: list[int]) -> SimpleNamespace:
    return SimpleNamespace(next_token_ids=torch.zeros(stride * len(counts), dtype=torch.int64),
                           accept_lens=torch.tensor(counts, dtype=torch.int32),
                           speculative_num_draft_tokens=stride)


def test_the_pace_routes_steps_and_learns_what_wide_steps_commit(monkeypatch) -> None:
    STATE.configure(PluginConfig(mode="lookup", plan_at="verify", width="served"))
    STATE.history, STATE.store, STATE.overlap, STATE.step = None, None, False, None
    STATE.stats.clear()
    STATE.pace, STATE.tally = Pace((1, 8), tau_prior=4.0, alpha=1.0), plain.Tally()
    ran: list[str] = []

    def plain_step(worker, b, *args, **kwargs):
        # SGLang's verify input passes the plan hook: a plain step plans nothing
        verify = SimpleNamespace(draft_token_num=1, draft_token=torch.zeros(2, dtype=torch.int64))
        assert hooks.before_prepare_for_verify(verify) is None and not STATE.step.planned
        ran.append("plain")
        return result(1, [1, 1])

    def wide_step(worker, b):
        ran.append("wide")
        if not b.forward_mode.is_extend():  # as DFLASH's verify leaves it: TARGET_VERIFY, which
            b.forward_mode = SimpleNamespace(is_extend=lambda: True,  # SGLang counts as extend
                                             is_idle=lambda: False)
        return result(8, [3, 5])

    monkeypatch.setattr(plain, "step", plain_step)
    STATE.pace.seconds.update({(1, 2, ""): 0.001, (8, 2, ""): 0.010})  # 1,000 against 400 a s
    hooks.around_forward(wide_step, object(), batch(2))
    assert ran == ["plain"] and STATE.stats["steps"] == 0

    STATE.pace.seconds[(8, 2, "")] = 0.002                      # now 2,000 against 1,000
    hooks.around_forward(wide_step, object(), batch(2))
    assert ran[-1] == "wide" and STATE.pace.tau == {}
    hooks.around_forward(wide_step, object(), batch(2, extend=True))  # a prefill: not paced
    assert STATE.pace.tau == {8: 4.0}                           # (3 + 5) / 2, read back
    assert STATE.pace._last[0] == 8 and ran[-1] == "wide"
    pace = STATE.report()["pace"]  # SGLang's server info carries what the pace measured
    assert pace["tau"] == {"width 1": 1.0, "width 8": 4.0}
    assert pace["steps"]["B2"]["width 1"]["step_ms"] == 1.0


def test_the_tally_reads_each_step_once_in_order() -> None:
    tally = plain.Tally()
    tally.push(16, torch.tensor([4, 6, 2], dtype=torch.int32))
    tally.push(16, torch.tensor([1], dtype=torch.int32))
    assert list(tally.ready()) == [(16, 3, 12), (16, 1, 1)]
    assert list(tally.ready()) == []


def test_width_plain_runs_every_decode_step_plain_and_still_times_it(monkeypatch) -> None:
    """TURNSPEC_SGLANG_WIDTH=plain (the check of what the plain step costs): a pace of one width
    built with the worker's graphs, every decode step plain, a prefill DFLASH's, and the plain
    steps' times in the server info."""
    STATE.configure(PluginConfig(mode="lookup", plan_at="verify", width="plain"))
    STATE.history, STATE.store, STATE.overlap, STATE.step = None, None, False, None
    STATE.stats.clear()
    monkeypatch.setattr(plain, "build", lambda worker: plain.PlainState(None, None))
    worker = SimpleNamespace(block_size=16)
    assert plain.after_init_cuda_graphs("graphs", worker) == "graphs"
    assert STATE.pace.widths == (1,)
    ran: list[str] = []
    monkeypatch.setattr(plain, "step", lambda w, b, *a, **k: ran.append("plain") or result(1, [1]))

    def wide_step(worker, b):
        ran.append("wide")
        return result(16, [1])

    clock = iter([10.0, 10.002, 10.004, 10.006, 10.008])
    monkeypatch.setattr(plain.time, "perf_counter", lambda: next(clock))
    for extend in (True, False, False, False, False, False):
        hooks.around_forward(wide_step, worker, batch(1, extend=extend))
    assert ran == ["wide"] + ["plain"] * 5
    assert STATE.report()["pace"]["steps"]["B1"] == {"width 1": {"step_ms": 2.0,
                                                                 "row_tok_s": 500.0}}
