"""The hooks the plugin puts on SGLang's DFLASH worker (through sglang.srt.plugins' hook
registry), in the order a decode step meets them (the trees' own live in trees.py, the
datastore's in datastore.py; `install` registers them all):

    DFlashWorkerV2.forward_batch_generation  AROUND: the step's context; with width "served",
                                             plain decode in its place where that pays
                                             (plain.py; "plain": always); afterwards what it
                                             committed
    _DflashDraftSampler                      REPLACE: the drafter's head inside the draft CUDA
                                             graph also keeps its top tokens' log-probabilities
                                             (draft_head.py)
    DFlashWorkerV2._greedy_sample_...head    AROUND: the same where the head runs eagerly
    spec_utils.traverse_tree                 AROUND: in a batch with a grammar, its walk over
                                             each row's block or tree over Python ints
                                             (grammar_walk.py: the same masks, ~6x less host)
    GrammarTree.from_linear_chain            AROUND: in a batch with a grammar, the speculation
                                             core picks each row's block (lookup_swap.py) before
                                             DFLASH copies the blocks for its grammar walk; with
                                             trees, the walk follows the trees
    DFlashVerifyInput.prepare_for_verify     BEFORE: the same, in a batch without a grammar;
                                             with trees, the tree's mask and positions
    TpModelWorker.forward_batch_generation   AROUND: with trees, the verify put in the
                                             accepted path's order before DFLASH accepts
    GrammarMask.apply                        AFTER: the same, in a batch with a grammar, once
                                             the grammar has masked the trees' logits
    resolve_dflash_verify_mask_policy        AROUND: with trees, the target's verify CUDA
                                             graphs are captured reading a mask
    DFlashWorkerV2.__init__                  AROUND: refuses a setup the plugin cannot serve;
                                             compiles the device plan's kernels; loads the
                                             datastore (datastore.py)
    DFlashWorkerV2.alloc_memory_pool         AFTER: with trees, SGLang's KV move compiled at
                                             each size a batch of trees reaches
    DFlashWorkerV2.init_cuda_graphs          AFTER: with width "served" or "plain", the plain
                                             step's backend and graphs (plain.py)
    DFlashWorkerV2.note_request_finished     AFTER: with trees and a learning datastore, a
                                             finished answer joins it
    Scheduler.get_internal_state             AFTER: the plugin's counters in SGLang's own
                                             server info (`internal_states[i]["turnspec"]`)
    Scheduler.is_disable_overlap_for_batch   AROUND: with an early first token, a small decode
                                             step after a prefill waits for the prefill's
                                             result to be processed (first_token.py)

Where the plan runs (plan_at, config.py):
    verify  the plan reads the drafter's block on the host (a sync), then SGLang loads the
            verify: that loading, host work, waits for the draft too;
    device  (default) the host never waits: each request's tokens are kept on the GPU
            (history.py), and the lookup, the rule and the swap run there in one kernel
            (lookup_swap.swap_on_device, kernels/plan_lookup.py), at the same two points.
"""

from __future__ import annotations

from typing import Any

import torch

from turnspec.engine.sglang_plugin import (
    append_graphs,
    draft_head,
    first_token,
    grammar_walk,
    plain,
    trees,
)
from turnspec.engine.sglang_plugin.checks import (
    GRAMMAR_MASK,
    GRAMMAR_TREE,
    GRAMMAR_WALK,
    MASK_POLICY,
    SAMPLER,
    SCHEDULER,
    TP_WORKER,
    VERIFY_INPUT,
    WORKER,
)
from turnspec.engine.sglang_plugin.datastore import StoreBranch, after_request_finished
from turnspec.engine.sglang_plugin.history import DeviceHistory
from turnspec.engine.sglang_plugin.lookup_swap import (
    drafter_top,
    swap_blocks,
    swap_on_device,
    swappable,
)
from turnspec.engine.sglang_plugin.state import STATE, Pending, StepContext, arg
from turnspec.engine.spec.planner import LOOKUP_AGREE, LOOKUP_MATCH
from turnspec.kernels.plan_lookup import warm
from turnspec.kernels.tree_links import tree_links


def around_forward(original, *args, **kwargs):
    """Run the step with its context set; keep what it committed: on the device under plan_at
    "device" (a prefill writes its rows first), else for the host (overlap scheduling)."""
    worker, batch = args[0], arg(args, kwargs, 1, "batch")
    on_device = STATE.config.plan_at == "device" and bool(batch.reqs)
    # read before the step: DFLASH's verify leaves the batch in TARGET_VERIFY, an "extend" mode
    prefill = batch.forward_mode.is_extend() or getattr(batch, "is_extend_in_batch", False)
    if on_device and prefill:
        if STATE.history is None:
            STATE.history = DeviceHistory.for_batch(batch)
        STATE.history.write(batch.reqs)
    if STATE.store is not None:
        STATE.store.watch(batch.reqs)
    STATE.step = StepContext(worker, batch)
    try:
        if STATE.pace is not None and plain.choose(batch, prefill):
            STATE.step.plain = True
            result = plain.step(worker, batch, *args[2:], **kwargs)
        else:
            result = original(*args, **kwargs)
        tree = STATE.step.tree
        if tree is not None and tree.attached and not tree.settled:
            raise RuntimeError("turnspec sglang plugin: a step verified trees that were never put "
                               "in path order before DFLASH accepted; expected SGLang "
                               f"{'to mask the grammar' if tree.grammar else 'to run the verify'} "
                               "through the hooked calls (checks.py)")
    finally:
        STATE.step = None
    if result is None or not batch.reqs:
        return result
    counts = result.accept_lens
    stride = int(result.speculative_num_draft_tokens or 1) if counts is not None else 1
    if not prefill and counts is not None:
        plain.tally(stride, result)  # a wide step's commits, for the pace
    if on_device and STATE.history is not None:
        STATE.history.append(batch.req_pool_indices, result.next_token_ids, counts, stride)
    elif STATE.overlap:
        STATE.pending = Pending.copy_of([r.rid for r in batch.reqs], result.next_token_ids,
                                        counts, stride)
    return result


def plan_once(blocks: torch.Tensor, grammar_ok: bool) -> None:
    """Swap in the chosen blocks, or plan the trees, once per decode step (the first of the two
    hooks below)."""
    step = STATE.step
    if step is not None and not step.planned and not step.plain:
        step.planned = True
        STATE.stats["steps"] += 1
        if STATE.config.mode == "trees":
            reqs = step.batch.reqs
            ok = [swappable(r, grammar_ok) for r in reqs]
            top = drafter_top(step, len(reqs), int(blocks.shape[1]) - 1)
            trees.plan(step, blocks, ok, [r.grammar is not None for r in reqs], top)
            return
        swap = swap_on_device if STATE.config.plan_at == "device" else swap_blocks
        swap(step, blocks, grammar_ok)


def around_grammar_chain(original, cls, verify_ids_2d):
    """DFLASH in a batch with a grammar: plan before the blocks are copied to the host, where
    the grammar's masks are built along them, so grammar rows are planned too."""
    plan_once(verify_ids_2d, grammar_ok=True)
    step = STATE.step
    if step is not None and step.tree is not None and not step.plain:  # the walk follows trees
        step.tree.grammar = True
        return cls.from_device(*tree_links(step.tree.parents), verify_ids_2d)
    return original(cls, verify_ids_2d)


def before_prepare_for_verify(verify, *args, **kwargs):
    """Before the target verify is loaded (no grammar walk this step, or it already planned).
    With trees, every verify carries a mask (its CUDA graphs read one): the step's trees', or a
    chain's where no step of ours is in flight."""
    step = STATE.step
    if step is not None and step.plain:  # plain decode: nothing to plan, no tree (plain.py)
        return None
    n = int(verify.draft_token_num)
    blocks = verify.draft_token.view(-1, n)
    plan_once(blocks, grammar_ok=False)
    if STATE.config.mode == "trees":
        batch, worker = arg(args, kwargs, 0, "batch"), arg(args, kwargs, 1, "target_worker")
        if batch.forward_mode.is_idle():
            return None
        tree = step.tree if step is not None and step.tree is not None else trees.chain(blocks)
        trees.attach(tree, verify, batch, trees.verify_backend(worker.model_runner))
    return None


def refusal(message: str):
    """An AROUND hook on the worker's constructor that refuses to start with `message`."""
    def refuse(original, *args, **kwargs):
        raise RuntimeError(f"turnspec sglang plugin: {message}")
    return refuse


def guard_worker(original, *args, **kwargs):
    """Refuse what the plugin cannot serve before the worker builds anything; note whether
    the scheduler overlaps steps (then a step's commits reach its requests one step late)."""
    server_args = arg(args, kwargs, 1, "server_args")
    bad = []
    if getattr(server_args, "tp_size", 1) != 1:
        bad.append(f"tp_size={server_args.tp_size} (the drafter's top-k is kept on one rank)")
    if getattr(server_args, "speculative_draft_window_size", None) is not None:
        bad.append("speculative_draft_window_size is set (a compact draft cache)")
    if STATE.config.mode == "trees":
        bad += trees.refusals(server_args)
    if bad:
        raise RuntimeError("turnspec sglang plugin: " + "; ".join(bad) + "; expected one GPU "
                           "and the full draft cache (or TURNSPEC_SGLANG_SPEC=off)")
    out = original(*args, **kwargs)
    nodes = int(args[0].block_size)
    if STATE.config.mode == "trees" and nodes > trees.MAX_NODES:
        raise RuntimeError(f"turnspec sglang plugin: trees at a DFLASH block of {nodes} would "
                           f"plan over {trees.GUESSES * (nodes - 1) * nodes // 2} swaps a row; "
                           f"expected a block of at most {trees.MAX_NODES} (or "
                           "TURNSPEC_SGLANG_SPEC=lookup)")
    STATE.overlap = not getattr(server_args, "disable_overlap_schedule", False)
    if STATE.config.datastore or STATE.config.learn_tokens:  # the store, in this process only
        STATE.store = StoreBranch(STATE.config)
    if STATE.config.plan_at == "device":  # compile the plan's kernels now, not in a request
        worker = args[0]
        try:
            warm(int(worker.block_size) - 1, worker.device, agree=LOOKUP_AGREE,
                 match_min=LOOKUP_MATCH, tree=STATE.config.mode == "trees")
            if STATE.config.mode == "trees":
                trees.warm(int(worker.block_size), worker.device,
                           int(worker.model_runner.model_config.vocab_size))
        except Exception as e:
            raise RuntimeError(f"turnspec sglang plugin: the device plan's kernels failed on "
                               f"{worker.device}: {e}; expected them to compile there (or "
                               "TURNSPEC_SGLANG_SPEC=lookup with TURNSPEC_SGLANG_PLAN_AT=verify: "
                               "the plan on the host)") from e
    return out


def after_internal_state(result, *args, **kwargs):
    """SGLang's internal state (its /server_info, Engine.get_server_info) with our counters."""
    state = getattr(result, "internal_state", None)
    if isinstance(state, dict):
        state["turnspec"] = STATE.report()
    return result


def install(registry: Any, hook_type: Any) -> None:
    """Register every hook (applied by SGLang right after its plugins ran)."""
    import importlib

    base = importlib.import_module(SAMPLER.rsplit(".", 1)[0])._DflashDraftSampler
    registry.register(SAMPLER, draft_head.sampler_class(base), hook_type.REPLACE)
    registry.register(f"{WORKER}.__init__", guard_worker, hook_type.AROUND)
    registry.register(f"{WORKER}.forward_batch_generation", around_forward, hook_type.AROUND)
    registry.register(f"{WORKER}._greedy_sample_from_vocab_parallel_head",
                      draft_head.around_eager_head, hook_type.AROUND)
    registry.register(f"{GRAMMAR_TREE}.from_linear_chain", around_grammar_chain,
                      hook_type.AROUND)
    registry.register(GRAMMAR_WALK, grammar_walk.around_traverse_tree, hook_type.AROUND)
    registry.register(f"{VERIFY_INPUT}.prepare_for_verify", before_prepare_for_verify,
                      hook_type.BEFORE)
    registry.register(f"{SCHEDULER}.get_internal_state", after_internal_state, hook_type.AFTER)
    if STATE.config.width != "fixed":
        registry.register(f"{WORKER}.init_cuda_graphs", plain.after_init_cuda_graphs,
                          hook_type.AFTER)
    if STATE.config.early_rows:
        registry.register(f"{SCHEDULER}.is_disable_overlap_for_batch",
                          first_token.around_disable_overlap, hook_type.AROUND)
    if STATE.config.append_graphs:
        registry.register(f"{WORKER}.init_cuda_graphs", append_graphs.after_init_cuda_graphs,
                          hook_type.AFTER)
        registry.register(f"{WORKER}._append_target_hidden_to_draft_kv_by_loc",
                          append_graphs.around_append, hook_type.AROUND)
    if STATE.config.mode == "trees":
        registry.register(f"{TP_WORKER}.forward_batch_generation", trees.around_target_forward,
                          hook_type.AROUND)
        registry.register(MASK_POLICY, trees.around_mask_policy, hook_type.AROUND)
        registry.register(f"{GRAMMAR_MASK}.apply", trees.after_grammar_mask, hook_type.AFTER)
        registry.register(f"{WORKER}.alloc_memory_pool", trees.after_alloc_memory_pool,
                          hook_type.AFTER)
        registry.register(f"{WORKER}.note_request_finished", after_request_finished,
                          hook_type.AFTER)
