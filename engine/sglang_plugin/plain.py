"""Plain decode inside SGLang's DFLASH worker: a step in which each row verifies one token, the
one it committed last, and nothing is drafted. That is what a server without speculation runs,
here on DFLASH's own verify path, so the drafter's context stays whole (the new token's target
hidden states are still written to the draft KV) and the next step may draft again.

With `TURNSPEC_SGLANG_WIDTH=served` (config.py) each decode step takes this step or DFLASH's own
(its block, or turnspec's trees), whichever has committed the most tokens a second at that batch
size as served (engine/spec/width.py `Pace`): one stream keeps its wide verify, a full batch
falls to plain decode where a wide verify costs more than it commits. `TURNSPEC_SGLANG_WIDTH=plain`
runs every decode step plain: not a way to serve, a check of what this step costs against SGLang
without speculation (scripts/gpu/profile_step.sh's `plain` mode).

`build` (after DFLASH's CUDA graphs are captured) makes a target attention backend and verify
CUDA graphs for one token a row, the way SGLang's adaptive EAGLE makes one set per step count
(the server's draft-token count overridden while they are built), kept beside DFLASH's and
swapped onto the target's model runner for a plain step only (`step`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from turnspec.engine.sglang_plugin.state import STATE, sync_free, to_host
from turnspec.engine.spec.width import Pace


@dataclass(slots=True)
class PlainState:
    """The target's attention backend and verify CUDA graphs (None: the target runs eagerly)
    for one token a row."""
    attn_backend: Any
    graph_runner: Any | None


def build(worker: Any) -> PlainState:
    """The plain step's backend and graphs for DFLASH `worker`'s target, built while SGLang's
    draft-token count reads 1 (its attention backends size their verify buffers from it)."""
    from sglang.srt.model_executor.runner.decode_cuda_graph_runner import DecodeCudaGraphRunner
    from sglang.srt.runtime_context import get_context, get_spec

    runner = worker.model_runner
    width = int(get_spec().speculative_num_draft_tokens)
    saved_workspace = runner.init_new_workspace
    STATE.building_plain = True  # trees: these graphs verify a chain (trees.around_mask_policy)
    get_context().override("turnspec.plain_build", speculative_num_draft_tokens=1)
    try:
        backend = runner._get_attention_backend(init_new_workspace=True)
        graphs = None
        if runner.decode_cuda_graph_runner is not None:
            graphs = DecodeCudaGraphRunner(runner, attn_backend=backend,
                                           speculative_num_draft_tokens=1)
    finally:
        runner.init_new_workspace = saved_workspace
        get_context().override("turnspec.plain_restore", speculative_num_draft_tokens=width)
        STATE.building_plain = False
    return PlainState(backend, graphs)


def after_init_cuda_graphs(result: Any, *args: Any, **kwargs: Any) -> Any:
    """AFTER DFlashWorkerV2.init_cuda_graphs (the target's own graphs exist by then): the plain
    step's, and the pace that picks between it and DFLASH's step."""
    worker = args[0]
    if getattr(worker, "_need_mamba_verify_commit", False):
        raise RuntimeError(f"turnspec sglang plugin: TURNSPEC_SGLANG_WIDTH={STATE.config.width} "
                           "on a model with mamba state: its verify commits that state by "
                           "DFLASH's block; "
                           "expected an attention-only target (or TURNSPEC_SGLANG_WIDTH=fixed)")
    try:
        STATE.plain = build(worker)
    except Exception as e:
        raise RuntimeError(f"turnspec sglang plugin: the plain decode step's one-token verify "
                           f"backend and graphs failed to build: {type(e).__name__}: {e}; "
                           "expected them to build beside DFLASH's (or "
                           "TURNSPEC_SGLANG_WIDTH=fixed)") from e
    # "plain": one width, still timed
    STATE.pace, STATE.tally = Pace(STATE.config.step_widths(int(worker.block_size))), Tally()
    return result


def choose(batch: Any, prefill: bool) -> bool:
    """Whether this decode step runs plain (the pace's pick), timing the decode step before it;
    False for a prefill (`prefill`: the hook's reading of the batch before the step; its time
    stays in the gap between decode steps) and an idle batch (which pauses the pace)."""
    pace = STATE.pace
    harvest()
    if batch.forward_mode.is_idle():
        pace.pause()
        return False
    if prefill:
        return False
    kind = "grammar" if batch.has_grammar else ""  # its walk costs the host more a node
    return pace.step(len(batch.reqs), time.perf_counter(), kind) == 1


@contextlib.contextmanager
def swapped(runner: Any, plain: PlainState) -> Iterator[None]:
    """The target's model runner on the plain step's backend and graphs, for one step."""
    saved = runner.attn_backend, runner.decode_cuda_graph_runner
    runner.attn_backend, runner.decode_cuda_graph_runner = plain.attn_backend, plain.graph_runner
    try:
        yield
    finally:
        runner.attn_backend, runner.decode_cuda_graph_runner = saved


def step(worker: Any, batch: Any, on_publish: Any = None, grammar_barrier: Any = None) -> Any:
    """One plain decode step of DFLASH `worker` over `batch`: the target's pass over each row's
    last committed token (not yet in the KV), its next token (greedy, or sampled as DFLASH
    samples, under the row's grammar), and the new token's context in the draft KV."""
    from sglang.srt.managers.utils import GenerationBatchResult
    from sglang.srt.speculative.draft_worker_common import make_draft_input_v2

    if batch.seq_lens.is_cuda:  # carried from the last step, maybe made on another stream
        batch.seq_lens.record_stream(torch.cuda.current_stream())
    draft_input = batch.spec_info  # the verify's input replaces it on the batch
    prefix, last, loc = rows(worker, batch, draft_input)
    bs = len(last)
    out = verify(worker, batch, last, prefix, loc)
    token = next_tokens(batch, draft_input, out.logits_output.next_token_logits, last,
                        grammar_barrier)
    commit = torch.ones(bs, dtype=torch.int32, device=token.device)
    new_seq_lens = prefix + 1
    if on_publish is not None:
        on_publish(new_seq_lens)
    worker._append_target_hidden_to_draft_kv_by_loc(
        target_hidden=out.logits_output.hidden_states, cache_loc=loc,
        cache_loc_2d=loc.view(bs, 1), positions=prefix, commit_lens=commit)
    out.logits_output.hidden_states = None  # as DFLASH: not copied to the host under overlap
    STATE.stats["plain_steps"] += 1
    STATE.stats["plain_grammar_steps"] += int(bool(batch.has_grammar))
    return GenerationBatchResult(
        logits_output=out.logits_output, next_token_ids=token, accept_lens=commit,
        can_run_cuda_graph=out.can_run_cuda_graph,
        next_draft_input=make_draft_input_v2(bonus_tokens=token, new_seq_lens=new_seq_lens),
        speculative_num_draft_tokens=1, new_seq_lens=new_seq_lens)


@sync_free
def rows(worker: Any, batch: Any, draft_input: Any) -> tuple[torch.Tensor, torch.Tensor,
                                                               torch.Tensor]:
    """Each row's committed length (the new token's position), its last committed token and
    the KV slot SGLang reserved for that token: [bs] each, on the device."""
    prefix = batch.seq_lens.to(torch.int64)
    last = draft_input.bonus_tokens.view(-1)
    table = worker.model_runner.req_to_token_pool.req_to_token
    return prefix, last, table[batch.req_pool_indices.to(torch.int64), prefix].to(torch.int64)


def verify(worker: Any, batch: Any, last: torch.Tensor, prefix: torch.Tensor,
           loc: torch.Tensor) -> Any:
    """The target's pass over one token a row (`last` at positions `prefix`, its KV into
    `loc`) on the plain step's backend and graphs, as DFLASH loads its verify."""
    from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode
    from sglang.srt.speculative.dflash_info import DFlashVerifyInput

    spec = DFlashVerifyInput(draft_token=last, positions=prefix, draft_token_num=1,
                             custom_mask=None, capture_hidden_mode=CaptureHiddenMode.FULL)
    batch.out_cache_loc = loc
    saved = batch.seq_lens_cpu, batch.seq_lens_sum
    if saved[0] is not None:  # the verify's host bound: the committed prefix and its one token
        bound = saved[0] + 1
        batch.seq_lens_cpu, batch.seq_lens_sum = bound, int(bound.sum())
    with swapped(worker.model_runner, STATE.plain):
        try:
            forward_batch, _ = spec.prepare_for_verify(batch, worker.target_worker)
        finally:
            batch.seq_lens_cpu, batch.seq_lens_sum = saved
        return worker.target_worker.forward_batch_generation(
            batch=None, forward_batch=forward_batch, is_verify=True, skip_attn_backend_init=True)


def next_tokens(batch: Any, draft_input: Any, logits: torch.Tensor, last: torch.Tensor,
                grammar_barrier: Any) -> torch.Tensor:
    """Each row's next token [bs] int64 from the target's `logits` [bs, V] after `last`: under
    the row's grammar and sampling parameters, as DFLASH picks its bonus token."""
    from sglang.srt.speculative.dflash_utils import (
        apply_dflash_verify_logits_adjustments,
        compute_dflash_sampling_correct_drafts_and_bonus,
        is_dflash_sampling_verify_available,
    )
    from sglang.srt.speculative.spec_utils import GrammarTree, build_grammar_vocab_mask

    bs, sampling, mask = len(last), batch.sampling_info, None
    if batch.has_grammar:
        mask = build_grammar_vocab_mask(
            reqs=batch.reqs, tree=GrammarTree.from_linear_chain(last.view(bs, 1)),
            sampling_info=sampling, device=logits.device, barrier=grammar_barrier)
    if sampling is not None:
        apply_dflash_verify_logits_adjustments(next_token_logits=logits, sampling_info=sampling,
                                               draft_token_num=1)
    if mask is not None:
        mask.apply(logits)
    if (sampling is not None and not sampling.is_all_greedy
            and is_dflash_sampling_verify_available()):
        _, token = compute_dflash_sampling_correct_drafts_and_bonus(
            candidates=last.view(bs, 1), next_token_logits=logits, sampling_info=sampling,
            max_top_k=draft_input.max_top_k, uniform_top_k_value=draft_input.uniform_top_k_value)
    else:
        token = logits.argmax(dim=-1)
    return token.to(torch.int64)


class Tally:
    """What DFLASH's wide steps committed, for the pace, read without waiting for the GPU: each
    step's total is copied to the host behind the step, and read once its copy is done."""

    def __init__(self) -> None:
        self.inflight: list[tuple[int, int, torch.Tensor, Any]] = []  # width, rows, total, event

    def push(self, width: int, commit_lens: torch.Tensor) -> None:
        (total,), done = to_host(commit_lens.sum())
        self.inflight.append((width, int(commit_lens.shape[0]), total, done))

    def ready(self) -> Iterator[tuple[int, int, int]]:
        """(width, rows, tokens) of each step whose copy is done, oldest first."""
        while self.inflight and (self.inflight[0][3] is None or self.inflight[0][3].query()):
            width, rows, total, _ = self.inflight.pop(0)
            yield width, rows, int(total)


def tally(width: int, result: Any) -> None:
    """After a wide step: what it committed, on its way to the host."""
    if STATE.pace is not None and result.accept_lens is not None and width > 1:
        STATE.tally.push(width, result.accept_lens)


def harvest() -> None:
    """The wide steps' commits that have reached the host, into the pace."""
    for width, rows, tokens in STATE.tally.ready():
        STATE.pace.committed(width, rows, tokens)
