"""EngineCore: the synchronous heart of the local engine.

    step() = schedule -> run (prefill | decode | draft -> verify -> accept -> commit) -> postprocess

It is single-threaded and knows nothing about asyncio; `LocalEngine` drives it from its own
thread. Tests drive it directly, step by step.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

import torch

from turnspec.engine.local.block_manager import BlockManager
from turnspec.engine.local.config import LocalEngineConfig
from turnspec.engine.local.detokenize import IncrementalDetokenizer
from turnspec.engine.local.plain_step import decode_step, prefill_step
from turnspec.engine.local.runner import ModelRunner, kv_blocks
from turnspec.engine.local.scheduler import ScheduledBatch, Scheduler
from turnspec.engine.local.sequence import Sequence, Status
from turnspec.engine.local.shadow_kv import ShadowKV
from turnspec.engine.local.spec_build import (
    build_speculation,
    prepare_drafter,
    shadow_blocks,
    spec_block,
    spec_options,
)
from turnspec.engine.local.spec_step import spec_decode
from turnspec.engine.loop_guard import LOOP_GUARD_STOP
from turnspec.engine.model.cpu_linear import gemm_plan, pack_linears
from turnspec.engine.model.weights import load_model
from turnspec.engine.protocol import (
    ContextLengthError,
    Delta,
    EngineError,
    EngineStats,
    GenerateRequest,
)
from turnspec.engine.spec.proposers.datastore import TokenDatastore

log = logging.getLogger("turnspec.engine")


class EngineCore:
    def __init__(self, cfg: LocalEngineConfig, tokenizer=None, drafter=None,
                 datastore: TokenDatastore | None = None) -> None:
        """`tokenizer`/`drafter` may be passed in (tests with tiny models); by default they
        are loaded from `cfg.model_dir` and `cfg.speculator`. `datastore`: cfg.spec_datastore's
        answers already read (bench spec shares one store between its cores and its check)."""
        self.cfg = cfg
        device, dtype = cfg.torch_device, cfg.torch_dtype
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        self.model = load_model(cfg.model_dir, device, dtype)
        if device.type == "cpu" and dtype == torch.float32:
            # prepacked fp32 GEMMs on CPU, the small-row backend measured here (cpu_linear.py)
            pack_linears(self.model, cfg.cpu_gemm)
            if (plan := gemm_plan(self.model)) is not None:
                log.info("cpu fp32 GEMM per row bucket: %s (%s)", plan.describe(), plan.source)
        mc = self.model.cfg
        self.drafter, context_kv = prepare_drafter(cfg, dtype, drafter)
        self.spec_block = spec_block(cfg, self.drafter)
        options = spec_options(cfg, self.drafter is not None)
        self.max_context = min(cfg.max_context or mc.max_position_embeddings, mc.max_position_embeddings)
        lookahead = max(self.spec_block, 1)
        block = cfg.block_size
        nblocks = kv_blocks(cfg, self.model, self.drafter, block, self.max_context, lookahead)
        # KV blocks past the block manager's range: the shadow rows of extra verify blocks
        shadow_rows, scratch = shadow_blocks(options, cfg.max_batch, block,
                                             self.drafter.config.block_size, nblocks) \
            if self.drafter is not None else (0, 0)
        self.blocks = BlockManager(nblocks - scratch, block)
        self.scheduler = Scheduler(self.blocks, cfg.max_batch, cfg.max_prefill_tokens, lookahead,
                                   cfg.admit_min_free)
        self.runner = ModelRunner(self.model, nblocks, block, self.max_context + lookahead + 1,
                                  device, dtype, self.drafter, context_kv)
        shadows = ShadowKV(self.runner, nblocks - scratch, shadow_rows,
                           self.drafter.config.block_size) if scratch else None
        # what a spec step reads (spec_step.py); bench spec swaps it (spec_build.respecified)
        self.speculation = build_speculation(cfg, options, self.runner, shadows, datastore)
        if device.type == "cuda":  # compile the Triton variants now, not inside a first request
            # (the accept kernel for the default block; another per-request block compiles once)
            from turnspec.kernels.warmup import warm_up

            warm_up(mc.num_heads, mc.num_kv_heads, mc.head_dim, block, dtype, device,
                    draft_lengths=(self.spec_block - 1,) if self.spec_block > 1 else ())
        if tokenizer is None:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(Path(cfg.model_dir))
        self.tokenizer = tokenizer
        eos = set(mc.eos_token_ids)
        if tokenizer.eos_token_id is not None:
            eos.add(tokenizer.eos_token_id)
        self.eos_ids = frozenset(eos)
        self.special_ids = frozenset(tokenizer.all_special_ids)
        self.seqs: dict[str, Sequence] = {}
        self.pending_aborts: list[str] = []
        # test-only: called with each scheduled batch before it runs; raising there fails the
        # batch as a real step failure would (tests/engine/local/test_core_faults.py)
        self.fault_hook: Callable[[ScheduledBatch], None] | None = None

    # -- requests --------------------------------------------------------------------------
    def validate(self, req: GenerateRequest) -> None:
        """Raise EngineError for a request this engine can never serve (its prompt); whether
        its id is free is the caller's registry's question (`add`, `LocalEngine.generate`)."""
        n = len(req.prompt_token_ids)
        if n >= self.max_context:
            raise ContextLengthError(
                f"prompt has {n} tokens; this model's context is {self.max_context} tokens "
                "(prompt + at least one generated token must fit)")
        vocab = self.model.cfg.vocab_size
        bad = [t for t in req.prompt_token_ids if not (0 <= t < vocab)]
        if bad:
            raise EngineError(f"prompt_token_ids: {len(bad)} ids outside [0, {vocab}), e.g. {bad[0]}")

    def add(self, req: GenerateRequest) -> None:
        """Validate and admit: the entry point for callers that drive the core directly."""
        self.validate(req)
        if req.request_id in self.seqs:
            raise EngineError(f"request_id {req.request_id!r} is already in flight")
        self.admit(req)

    def admit(self, req: GenerateRequest, accepted: tuple[float, float] | None = None) -> None:
        """Queue a request its caller has validated (`LocalEngine.generate` did, on its loop,
        at `accepted`: its queue time runs from there, the wait for the current step included)."""
        stop_ids = frozenset(req.sampling.stop_token_ids) | (
            frozenset() if req.sampling.ignore_eos else self.eos_ids)
        detok = IncrementalDetokenizer(self.tokenizer, req.sampling.stop, self.special_ids)
        block = self.spec_block if req.spec_block_size is None else min(req.spec_block_size, self.spec_block)
        seq = Sequence.create(req, detok, stop_ids, block if self.drafter is not None else 0,
                              accepted)
        self.seqs[req.request_id] = seq
        self.scheduler.add(seq)

    def abort(self, request_id: str) -> None:
        """Thread-safe enough: a list append; applied at the start of the next step."""
        self.pending_aborts.append(request_id)

    def has_work(self) -> bool:
        return self.scheduler.has_work() or bool(self.pending_aborts)

    def stats(self) -> EngineStats:
        return EngineStats(
            active_sequences=len(self.scheduler.running),
            waiting_sequences=len(self.scheduler.waiting),
            free_kv_blocks=self.blocks.num_free, total_kv_blocks=self.blocks.num_blocks,
            cached_kv_blocks=self.blocks.num_cached_free)

    # -- the step --------------------------------------------------------------------------
    def step(self) -> list[Delta]:
        """One step. An exception while running the batch fails only that batch's requests
        (each with an error delta that names the exception); the engine keeps serving."""
        deltas = self._apply_aborts()
        batch = self.scheduler.schedule()
        if batch is None:
            return deltas
        try:
            if self.fault_hook is not None:
                self.fault_hook(batch)
            self._run_batch(batch, deltas)
        except Exception as e:
            log.exception("engine %s step failed for %d request(s)", batch.kind, len(batch.seqs))
            deltas += self.fail(batch.seqs, f"engine {batch.kind} step failed: "
                                f"{type(e).__name__}: {e}")
        return deltas

    def _run_batch(self, batch: ScheduledBatch, deltas: list[Delta]) -> None:
        t0, fwd0 = time.perf_counter(), self.runner.forward_seconds
        seqs = batch.seqs
        t_run = time.perf_counter()
        speculative = batch.kind != "prefill" and self.drafter is not None \
            and any(self.speculation.policy.speculates(s) for s in seqs)
        if batch.kind == "prefill":
            new_tokens, advance = prefill_step(self.runner, seqs)
        elif speculative:
            new_tokens, advance = spec_decode(self.runner, self.speculation, seqs)
        else:
            new_tokens, advance = decode_step(self.runner, self.speculation.policy, seqs)
        if batch.kind != "prefill" and self.drafter is not None:  # the policy's price of a spec step
            self.speculation.policy.record_step(speculative, time.perf_counter() - t_run)
        overhead = (time.perf_counter() - t0) - (self.runner.forward_seconds - fwd0)
        for seq, toks, adv in zip(seqs, new_tokens, advance, strict=True):
            seq.timing.engine_host_ms += overhead * 1000.0
            deltas.append(self._postprocess(seq, toks, adv, batch.kind == "prefill"))

    # -- postprocess -----------------------------------------------------------------------
    def _postprocess(self, seq: Sequence, new_tokens: list[int], advance: int, prefill: bool) -> Delta:
        now = time.perf_counter()
        appended: list[int] = []
        for t in new_tokens:
            if seq.remaining <= 0:
                seq.finish_reason = "length"
                break
            seq.token_ids.append(t)
            appended.append(t)
            if seq.request.grammar is not None and not seq.request.grammar.accept(t):
                seq.finish_reason = "error"  # engine bug: the mask should have prevented this
                break
            if t in seq.stop_ids:
                seq.finish_reason = "stop"
                break
            seq.detok.add([t])
            if seq.detok.stopped:
                seq.finish_reason = "stop"
                break
            if seq.loop is not None and seq.loop.push(t) and _may_end(seq):
                seq.finish_reason, seq.stop_reason = "stop", LOOP_GUARD_STOP
                break
        if len(new_tokens) > max(len(appended), 1):  # a verify step ran past a stop or max_tokens
            seq.spec.drop_tail(len(new_tokens) - len(appended))
        seq.num_computed = min(seq.num_computed + advance, len(seq.token_ids) - 1)
        if seq.finish_reason is None:
            if seq.remaining <= 0 or len(seq.token_ids) >= self.max_context:
                seq.finish_reason = "length"
            else:
                self.scheduler.commit(seq)
        if appended and not seq.t_first_token:
            seq.t_first_token = now
        finished = seq.finish_reason is not None
        delta = Delta(seq.request_id, appended, seq.detok.take(final=finished))
        if finished:
            self._finish(seq, delta, now)
        return delta

    def _finish(self, seq: Sequence, delta: Delta, now: float, publish: bool = True) -> None:
        if publish:  # computed full blocks stay reusable (next turn, same prefix)
            self.scheduler.commit(seq)
            learner = self.speculation.learner
            if learner is not None and seq.finish_reason in ("stop", "length"):
                learner.learn(seq.output_ids)
        self.scheduler.finish(seq)
        self.seqs.pop(seq.request_id, None)
        tm = seq.timing
        start = seq.t_scheduled or now
        first = seq.t_first_token or now
        tm.queue_ms = (start - seq.t_received) * 1000.0
        tm.prefill_ms = (first - start) * 1000.0
        tm.decode_ms = (now - first) * 1000.0
        tm.first_token_ms = (first - seq.t_received) * 1000.0
        tm.completion_tokens = seq.num_output
        delta.finished = True
        delta.finish_reason = seq.finish_reason
        delta.stop_reason = seq.stop_reason
        if seq.finish_reason == "error":
            delta.error = "grammar rejected a sampled token"
        delta.timing = tm
        delta.spec = seq.spec if seq.spec.verify_steps else None

    def fail(self, seqs: list[Sequence], message: str) -> list[Delta]:
        """Finish `seqs` (those still in flight) with an error delta carrying `message`. Their
        blocks are freed without publishing anything to the prefix cache: a failed step may
        have left partial KV behind."""
        deltas = []
        now = time.perf_counter()
        for seq in seqs:
            if self.seqs.get(seq.request_id) is not seq:
                continue  # finished earlier in the failed step (its final delta went out)
            seq.finish_reason = "error"
            delta = Delta(seq.request_id, [], seq.detok.take(final=True))
            self._finish(seq, delta, now, publish=False)
            delta.error = message
            deltas.append(delta)
        return deltas

    def fail_all(self, message: str) -> list[Delta]:
        """Finish every in-flight request with an error (a failure outside any batch)."""
        return self.fail(list(self.seqs.values()), message)

    def _apply_aborts(self) -> list[Delta]:
        deltas = []
        while self.pending_aborts:
            rid = self.pending_aborts.pop()
            seq = self.seqs.get(rid)
            if seq is None or seq.status is Status.FINISHED:
                continue
            seq.finish_reason = "abort"
            delta = Delta(rid, [], seq.detok.take(final=True))
            self._finish(seq, delta, time.perf_counter())
            deltas.append(delta)
        return deltas


def _may_end(seq: Sequence) -> bool:
    """Whether the output may end here: always without a grammar; with one, only where it is
    complete (outside a tool call), so the loop guard never cuts a call in half."""
    g = seq.request.grammar
    return g is None or g.is_completed()
