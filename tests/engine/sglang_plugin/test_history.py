"""plan_at "device" keeps each request's tokens on the device: a prefill writes the rows of its
requests from the scheduler's record, each step appends what it committed, and the rows then
hold exactly what the host record will hold (the hooks driven as SGLang's worker calls them;
plain namespaces for SGLang's batch and result, as in test_lookup_swap.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from turnspec.engine.sglang_plugin import hooks
from turnspec.engine.sglang_plugin.config import PluginConfig
from turnspec.engine.sglang_plugin.history import DeviceHistory
from turnspec.engine.sglang_plugin.state import STATE


def batch_of(reqs: list[SimpleNamespace], extend: bool, cap: int = 12) -> SimpleNamespace:
    return SimpleNamespace(
        reqs=reqs, forward_mode=SimpleNamespace(is_extend=lambda: extend),
        req_pool_indices=torch.tensor([r.req_pool_idx for r in reqs], dtype=torch.int32),
        req_to_token_pool=SimpleNamespace(req_to_token=torch.zeros((6, cap), dtype=torch.int32)))


def run_step(batch: SimpleNamespace, tokens: list[int], counts: list[int] | None, stride: int) -> None:
    result = SimpleNamespace(next_token_ids=torch.tensor(tokens),
                             accept_lens=torch.tensor(counts) if counts is not None else None,
                             speculative_num_draft_tokens=stride if counts is not None else None)
    hooks.around_forward(lambda worker, batch: result, object(), batch)


def rows(history: DeviceHistory, slots: list[int]) -> list[list[int]]:
    return [history.tokens[s, : int(history.lengths[s])].tolist() for s in slots]


def test_prefill_writes_and_steps_append_on_the_device() -> None:
    STATE.configure(PluginConfig(mode="lookup", plan_at="device"))
    STATE.history = None
    a = SimpleNamespace(rid="a", req_pool_idx=4, origin_input_ids=[1, 2, 3], output_ids=[])
    b = SimpleNamespace(rid="b", req_pool_idx=1, origin_input_ids=[7, 8], output_ids=[9])
    try:
        run_step(batch_of([a, b], extend=True), [10, 11], None, 1)   # prefill: one token each
        hist = STATE.history
        assert hist.tokens.shape[0] == 6 and hist.cap == 12          # the req_to_token table's
        assert rows(hist, [4, 1]) == [[1, 2, 3, 10], [7, 8, 9, 11]]
        # a decode step of blocks of 3: a commits 2 tokens, b all 3
        run_step(batch_of([a, b], extend=False), [20, 21, 0, 30, 31, 32], [2, 3], 3)
        assert rows(hist, [4, 1]) == [[1, 2, 3, 10, 20, 21], [7, 8, 9, 11, 30, 31, 32]]
        c = SimpleNamespace(rid="c", req_pool_idx=4, origin_input_ids=[5], output_ids=[])
        run_step(batch_of([c], extend=True), [6], None, 1)           # slot 4 reused: rewritten
        assert rows(hist, [4, 1]) == [[5, 6], [7, 8, 9, 11, 30, 31, 32]]
        long = SimpleNamespace(rid="d", req_pool_idx=0, origin_input_ids=list(range(20)), output_ids=[])
        run_step(batch_of([long], extend=True), [99], None, 1)       # clipped to the row
        assert rows(hist, [0]) == [list(range(12))]
    finally:
        STATE.history = None
        STATE.configure(PluginConfig(mode="lookup"))


def test_other_plan_points_keep_no_device_history() -> None:
    STATE.configure(PluginConfig(mode="lookup", plan_at="verify"))
    STATE.history = None
    a = SimpleNamespace(rid="a", req_pool_idx=0, origin_input_ids=[1, 2], output_ids=[])
    run_step(batch_of([a], extend=True), [3], None, 1)
    assert STATE.history is None


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine where CUDA cannot run")
def test_the_worker_compiles_the_plan_at_start_or_refuses_to_start() -> None:
    """Under plan_at "device" the DFLASH worker's start runs the plan's kernels once for its
    block (no request waits on their compile); where they cannot run, the start is refused."""
    STATE.configure(PluginConfig(mode="lookup", plan_at="device"))
    server_args = SimpleNamespace(tp_size=1, speculative_draft_window_size=None,
                                  disable_overlap_schedule=False)
    built = []
    worker = SimpleNamespace(block_size=16, device="cpu")
    hooks.guard_worker(lambda *a, **k: built.append(a), worker, server_args)
    assert built and STATE.overlap
    broken = SimpleNamespace(block_size=16, device="cuda")  # no CUDA on this machine
    with pytest.raises(RuntimeError, match="the device plan's kernels failed on cuda"):
        hooks.guard_worker(lambda *a, **k: None, broken, server_args)
    STATE.configure(PluginConfig(mode="lookup"))


def test_steps_through_the_hooks_keep_history_and_plan_as_the_host_would() -> None:
    """Prefill, then decode steps as DFLASH's worker runs them through the hooks (the plan where
    the verify is prepared, the commits after the step): after every step the kept rows are
    the requests' tokens, and every step's swaps are the host plan's over those tokens."""
    import math
    import random
    from array import array

    from turnspec.engine.sglang_plugin.lookup_swap import swap_blocks

    rng, width = random.Random(3), 4
    STATE.configure(PluginConfig(mode="lookup", plan_at="device", lookup_below=3.0))
    STATE.history, STATE.device_stats, STATE.overlap = None, None, False
    greedy = SimpleNamespace(top_k=1, temperature=0.0, frequency_penalty=0.0,
                             presence_penalty=0.0, repetition_penalty=1.0)
    reqs = [SimpleNamespace(rid=f"r{i}", req_pool_idx=slot, grammar=None, sampling_params=greedy,
                            origin_input_ids=[rng.randrange(4) for _ in range(rng.randrange(20, 40))],
                            output_ids=array("q")) for i, slot in enumerate([2, 0, 5])]
    bonus = [rng.randrange(4) for _ in reqs]
    run_step(batch_of(reqs, extend=True, cap=128), bonus, None, 1)
    for r, t in zip(reqs, bonus, strict=True):
        r.output_ids.append(t)
    try:
        for _ in range(8):
            blocks = torch.randint(0, 4, (3, 1 + width))
            blocks[:, 0] = torch.tensor([r.output_ids[-1] for r in reqs])
            lp = torch.tensor([[math.log(rng.uniform(0.05, 1.0))] for _ in range(3 * width)])
            worker = SimpleNamespace(_draft_sampler=SimpleNamespace(top_ids=lp.long(), top_lp=lp))
            host = blocks.clone()
            swap_blocks(SimpleNamespace(worker=worker, batch=SimpleNamespace(reqs=reqs),
                                        eager_top=None), host)
            accepted = [rng.randrange(width + 1) for _ in reqs]  # the target's verdicts
            bonus = [rng.randrange(4) for _ in reqs]
            commits: list[list[int]] = []

            def step(worker, batch, blocks=blocks, accepted=accepted, bonus=bonus, commits=commits):
                verify = SimpleNamespace(draft_token=blocks.view(-1), draft_token_num=1 + width)
                hooks.before_prepare_for_verify(verify)  # the plan swaps blocks in place
                commits += [[*blocks[i, 1 : 1 + a].tolist(), bonus[i]] for i, a in enumerate(accepted)]
                out = [c + [0] * (1 + width - len(c)) for c in commits]
                return SimpleNamespace(next_token_ids=torch.tensor(out).view(-1),
                                       accept_lens=torch.tensor([len(c) for c in commits]),
                                       speculative_num_draft_tokens=1 + width)

            hooks.around_forward(step, worker, batch_of(reqs, extend=False, cap=128))
            assert blocks.tolist() == host.tolist()
            for r, c in zip(reqs, commits, strict=True):
                r.output_ids.extend(c)
            assert rows(STATE.history, [2, 0, 5]) == [r.origin_input_ids + list(r.output_ids) for r in reqs]
        assert STATE.report()["rows_swapped"] > 0
    finally:
        STATE.history, STATE.device_stats = None, None
        STATE.configure(PluginConfig(mode="lookup"))
