"""Step A inside SGLang, on the CPU: the speculation core's chosen block overwrites a greedy
row's block in the verify input DFLASH accepts from; sampled rows, rows whose history does not end
at the block's anchor, and rows under a grammar once the blocks left for the grammar walk keep
the drafter's block.

SGLang's scheduler objects cannot run here (no GPU, no sglang): the batch and requests below
are plain namespaces holding exactly the fields the plugin reads of SGLang 0.5.17's ScheduleBatch
and Req; the GPU test (tests/engine/test_sglang_plugin_cuda.py) runs the real ones."""

from __future__ import annotations

import math
import random
from array import array
from types import SimpleNamespace

import pytest
import torch

from turnspec.engine.sglang_plugin import hooks
from turnspec.engine.sglang_plugin.config import PluginConfig
from turnspec.engine.sglang_plugin.history import DeviceHistory
from turnspec.engine.sglang_plugin.lookup_swap import (
    committed,
    swap_blocks,
    swap_on_device,
    swappable,
)
from turnspec.engine.sglang_plugin.state import STATE, Pending, StepContext

B = 5  # block: the anchor and 4 drafts


def req(rid: str, origin: list[int], output: list[int], *, greedy: bool = True,
        grammar: object = None) -> SimpleNamespace:
    sp = SimpleNamespace(top_k=1 if greedy else 50, temperature=0.0 if greedy else 0.7,
                         frequency_penalty=0.0, presence_penalty=0.0, repetition_penalty=1.0)
    return SimpleNamespace(rid=rid, origin_input_ids=origin, output_ids=array("q", output),
                           sampling_params=sp, grammar=grammar)


def step_for(reqs: list[SimpleNamespace], anchors: list[int], p_draft: float):
    """A decode step whose drafter proposed 1 1 1 1 after each anchor with probability
    `p_draft` at every position, as the draft CUDA graph leaves it in the sampler's buffers."""
    n = len(reqs) * (B - 1)
    sampler = SimpleNamespace(top_ids=torch.ones((n, 1), dtype=torch.int64),
                              top_lp=torch.full((n, 1), math.log(p_draft)))
    worker = SimpleNamespace(_draft_sampler=sampler)
    blocks = torch.ones((len(reqs), B), dtype=torch.int64)
    blocks[:, 0] = torch.tensor(anchors)
    verify = SimpleNamespace(draft_token=blocks.reshape(-1), draft_token_num=B)
    return StepContext(worker, SimpleNamespace(reqs=reqs)), verify, blocks


def test_greedy_rows_take_the_lookup_where_the_drafter_expects_little() -> None:
    STATE.configure(PluginConfig(mode="lookup"))
    STATE.stats.clear()
    history = [5, 6, 7, 8, 9, 5, 6, 7]  # "5 6 7" again: the lookup continues 8 9 5 6
    reqs = [req("a", history, []), req("b", history, [], grammar=object()),
            req("c", history, [], greedy=False), req("d", history[:-1], [3])]
    step, verify, blocks = step_for(reqs, [7, 7, 7, 7], p_draft=0.1)
    swap_blocks(step, verify.draft_token.view(4, B))
    assert blocks.tolist() == [[7, 8, 9, 5, 6], [7, 1, 1, 1, 1], [7, 1, 1, 1, 1], [7, 1, 1, 1, 1]]
    assert verify.draft_token.view(4, B).data_ptr() == blocks.data_ptr()  # in place
    assert STATE.stats["rows_swapped"] == 1 and STATE.stats["history_misses"] == 1
    assert STATE.stats["rows_planned"] == 1


def test_a_confident_drafter_keeps_its_block_and_short_copies_keep_its_tail() -> None:
    STATE.configure(PluginConfig(mode="lookup"))
    history = [5, 6, 7, 8, 5, 6, 7]
    step, verify, blocks = step_for([req("a", history, [])], [7], p_draft=0.99)
    swap_blocks(step, blocks)
    assert blocks.tolist() == [[7, 1, 1, 1, 1]]          # expects ~3.9 drafts: no swap
    STATE.configure(PluginConfig(mode="lookup", lookup_below=10.0))
    swap_blocks(step, blocks)
    # the continuation "8 5 6 7" fits; a shorter one would keep the drafter's tail
    assert blocks.tolist() == [[7, 8, 5, 6, 7]]


def test_history_from_the_record_or_with_the_last_steps_commits() -> None:
    r = req("a", [1, 2], [3, 4])
    assert committed(r, None, 4) == [1, 2, 3, 4]
    assert committed(r, [5, 6], 6) == [1, 2, 3, 4, 5, 6]   # overlap: the record lags a step
    assert committed(r, [3, 4], 4) == [1, 2, 3, 4]         # the record already has them
    assert committed(r, [5, 6], 9) is None                 # neither ends at the anchor
    assert swappable(r) and not swappable(req("b", [1], [], greedy=False))


def with_history(step: StepContext, reqs: list[SimpleNamespace]) -> None:
    """plan_at "device": the requests' tokens kept on the device, a slot each."""
    for i, r in enumerate(reqs):
        r.req_pool_idx = i
    step.batch.req_pool_indices = torch.arange(len(reqs))
    STATE.history = DeviceHistory(len(reqs), 32, "cpu")
    STATE.history.write(reqs)


@pytest.mark.parametrize("plan_at", ["device", "verify"])
def test_grammar_rows_are_planned_where_the_grammar_walk_copies_the_blocks(plan_at: str) -> None:
    """In a batch with a grammar, DFLASH copies the blocks for its grammar walk
    (GrammarTree.from_linear_chain) before the verify: planned there, a grammar row takes the
    lookup too, and the verify's own hook then leaves the step alone (one plan a step)."""
    STATE.configure(PluginConfig(mode="lookup", plan_at=plan_at))
    STATE.stats.clear()
    STATE.device_stats = None
    history = [5, 6, 7, 8, 9, 5, 6, 7]
    reqs = [req("a", history, []), req("b", history, [], grammar=object())]
    step, verify, blocks = step_for(reqs, [7, 7], p_draft=0.1)
    with_history(step, reqs)
    seen = []
    STATE.step = step
    try:
        hooks.around_grammar_chain(lambda cls, ids: seen.append(ids.tolist()), object, blocks)
        hooks.before_prepare_for_verify(verify)
    finally:
        STATE.step, STATE.history = None, None
    assert seen == [[[7, 8, 9, 5, 6], [7, 8, 9, 5, 6]]]  # the walk copies the chosen blocks
    assert STATE.stats["steps"] == 1 and STATE.report()["grammar_rows_swapped"] == 1
    STATE.device_stats = None


@pytest.mark.parametrize("plan_at", ["device", "verify"])
def test_without_the_grammar_walk_grammar_rows_keep_the_drafters_block(plan_at: str) -> None:
    STATE.configure(PluginConfig(mode="lookup", plan_at=plan_at))
    history = [5, 6, 7, 8, 9, 5, 6, 7]
    reqs = [req("b", history, [], grammar=object())]
    step, verify, blocks = step_for(reqs, [7], p_draft=0.1)
    with_history(step, reqs)
    STATE.step = step
    try:
        hooks.before_prepare_for_verify(verify)
    finally:
        STATE.step, STATE.history = None, None
    assert blocks.tolist() == [[7, 1, 1, 1, 1]]


def random_step(rng: random.Random, bs: int, device: str = "cpu"):
    """A step over `bs` rows of short histories in a small vocabulary (so prompt lookup finds
    copies), random drafts and random draft probabilities; some rows sampled, some under a
    grammar, some whose history does not end at the anchor."""
    reqs, anchors = [], []
    slots = rng.sample(range(2 * bs), bs)  # request slots: the device history's rows
    for i in range(bs):
        hist = [rng.randrange(6) for _ in range(rng.randrange(3, 30))]
        reqs.append(req(f"r{i}", hist[:-2], hist[-2:], greedy=rng.random() > 0.15,
                        grammar=object() if rng.random() < 0.2 else None))
        reqs[-1].req_pool_idx = slots[i]
        anchors.append(hist[-1] if rng.random() > 0.1 else 9)
    step, verify, blocks = step_for(reqs, anchors, p_draft=0.5)
    step.batch.req_pool_indices = torch.tensor(slots, device=device)
    STATE.history = DeviceHistory(2 * bs, 40, device)
    STATE.history.write(reqs)
    blocks[:, 1:] = torch.randint(0, 6, (bs, B - 1), generator=torch.Generator().manual_seed(
        rng.randrange(1 << 30)))
    lp = torch.rand(bs * (B - 1), 1, generator=torch.Generator().manual_seed(rng.randrange(1 << 30)))
    step.worker._draft_sampler.top_lp = (lp * 0.999 + 0.001).log()
    return step, blocks.to(device)


@pytest.mark.parametrize("seed", range(40))
def test_the_device_plan_swaps_what_the_host_plan_swaps(seed: int) -> None:
    """plan_at "device" looks up and decides on tensors, over the tokens kept there, by the
    planner's own rule (`lookup_wins`): on the same step it leaves exactly the blocks the host
    plan leaves, grammar rows included."""
    rng = random.Random(seed)
    STATE.configure(PluginConfig(mode="lookup", lookup_below=rng.choice([0.5, 2.0, 3.5])))
    grammar_ok = rng.random() < 0.5
    step, blocks = random_step(rng, rng.randrange(1, 9))
    on_host = blocks.clone()
    STATE.stats.clear()
    swap_blocks(step, on_host, grammar_ok)
    host_stats = dict(STATE.stats)
    STATE.stats.clear()
    STATE.device_stats = None
    swap_on_device(step, blocks, grammar_ok)
    assert blocks.tolist() == on_host.tolist()
    report = STATE.report()
    for name in ("rows_swapped", "grammar_rows_swapped"):
        assert report.get(name, 0) == host_stats.get(name, 0)
    STATE.device_stats = None
    STATE.history = None


def test_the_last_steps_commits_come_from_their_host_copy() -> None:
    pending = Pending.copy_of(["a", "b"], torch.tensor([5, 6, 0, 7, 0, 0]), torch.tensor([2, 1]), 3)
    assert pending.by_rid() == {"a": [5, 6], "b": [7]}
    one_each = Pending.copy_of(["a", "b"], torch.tensor([4, 8]), None, 1)
    assert one_each.by_rid() == {"a": [4], "b": [8]}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_the_device_plan_never_waits_for_the_gpu() -> None:
    """plan_at "device" on CUDA tensors under torch's sync debug mode: any host sync (a
    .tolist(), .item(), a pageable copy) raises."""
    STATE.configure(PluginConfig(mode="lookup", lookup_below=3.5))
    step, blocks = random_step(random.Random(0), 8, "cuda")
    sampler = step.worker._draft_sampler
    sampler.top_lp = sampler.top_lp.cuda()
    expected = blocks.clone()
    swap_blocks(step, expected)
    torch.cuda.set_sync_debug_mode("error")
    try:
        swap_on_device(step, blocks)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert blocks.tolist() == expected.tolist()
    STATE.device_stats = None
    STATE.history = None
