"""Offline tau: replay greedy speculative decoding over target-generated (greedy) data.

For a sequence whose response the target produced greedily, online greedy decoding with the
drafter visits exactly these anchors: the first response token (prefill's output), then
anchor + accepted + 1 after each step. At each anchor the drafter sees the target features of
every position strictly before it (a causal target gives the same features from one full
forward as from the incremental verify passes) and its drafts are accepted while they equal
the actual next tokens; the bonus token is the actual token after the accepted prefix. So
tau = generated tokens / steps here equals the online greedy acceptance length (z-lab
`acceptance_lengths`, bonus included), up to floating-point ties.

With `lookup`, each step verifies what the engine's planner (engine/spec/planner.py) picks: the
drafter's block or the lookup continuation and, with `branches` > 1, the other candidates, the
block accepted furthest committed (tau_lookup.py `PlannedPick`): τ as the engine serves it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import Tensor

from turnspec.engine.drafter.model import DFlashDrafter
from turnspec.engine.spec.options import SpecOptions
from turnspec.engine.spec.proposers.datastore import TokenDatastore
from turnspec.speculator.blocks import block_inputs
from turnspec.speculator.data import Sample
from turnspec.speculator.target import FrozenTarget
from turnspec.speculator.tau_lookup import AcceptedOf, PlannedPick

# pick(drafts, logits, anchor, active, accepted_of) -> the drafts a replayed step verifies
# (`replay_steps`); accepted_of(candidates [n, blk-1], rows [n] | None) -> [n] drafts the
# target would accept of each (a block of row rows[i]; None: block i is row i's)
Pick = Callable[[Tensor, Tensor, Tensor, Tensor, AcceptedOf], Tensor]


@dataclass(slots=True, frozen=True)
class TauResult:
    tau: float                   # mean tokens per step (accepted + bonus), 1 <= tau <= B
    steps: int
    tokens: int                  # generated tokens replayed (after the first, prefill's)
    samples: int
    histogram: tuple[int, ...]   # histogram[n-1] = steps that produced n tokens
    ci90: tuple[float, float]    # 90% bootstrap interval over the samples (`tau_interval`)
    # (tokens, steps) per sample, so that sets evaluated apart can be pooled with an interval
    # (scripts/analysis/pool_tau.py); in the order replayed (by length)
    rows: tuple[tuple[int, int], ...] = ()

    def to_dict(self) -> dict:
        return asdict(self)


def replay_order(samples: list[Sample], max_len: int = 2048) -> list[Sample]:
    """The samples a replay scores, in the order of its rows (`TauResult.rows`): those with a
    response token to draft within max_len, shortest first (a stable sort)."""
    seqs = [s for s in samples if s.prompt_len < min(len(s.input_ids), max_len) - 1]
    return sorted(seqs, key=lambda s: len(s.input_ids))


@torch.no_grad()
def evaluate_tau(drafter: DFlashDrafter, target: FrozenTarget, samples: list[Sample], *,
                 block_size: int | None = None, batch_size: int = 32,
                 max_len: int = 2048) -> TauResult:
    """Greedy tau of `drafter` on `samples` (right-truncated to max_len tokens)."""
    blk = block_size or drafter.config.block_size
    return evaluate_tau_blocks(drafter, target, samples, (blk,), batch_size=batch_size,
                               max_len=max_len)[blk]


@torch.no_grad()
def evaluate_tau_blocks(drafter: DFlashDrafter, target: FrozenTarget, samples: list[Sample],
                        block_sizes: Sequence[int], *, batch_size: int = 32,
                        max_len: int = 2048, lookup: bool = False) -> dict[int, TauResult]:
    """`evaluate_tau` at several block sizes, running the target once per batch for all of
    them: on a CPU the target's forward over ~600-1,000-token tool prompts is most of a
    replay's time, so B=8 and B=16 together cost little more than one. `lookup`: with prompt
    lookup (`replay_steps`)."""
    runs = evaluate_tau_runs(drafter, target, samples, block_sizes, (lookup,),
                             batch_size=batch_size, max_len=max_len)
    return {blk: r for (blk, _), r in runs.items()}


@torch.no_grad()
def evaluate_tau_runs(drafter: DFlashDrafter, target: FrozenTarget, samples: list[Sample],
                      block_sizes: Sequence[int], lookups: Sequence[bool], *,
                      batch_size: int = 32, max_len: int = 2048, branches: int = 1,
                      plan: str = "first",
                      datastore: TokenDatastore | None = None) -> dict[tuple[int, bool], TauResult]:
    """`evaluate_tau_blocks` for every (block size, lookup) pair, keyed so, from one target
    pass per batch for all of them. `branches` > 1: the lookup runs verify that many blocks a
    step, their swaps planned by `plan`, the last a `datastore` draft if given (`replay_steps`)."""
    blocks = tuple(dict.fromkeys(block_sizes))
    if not blocks:
        raise ValueError("block_sizes: expected at least one block size")
    for blk in blocks:
        if not 2 <= blk <= drafter.config.block_size:
            raise ValueError(f"block_size={blk}: expected 2..{drafter.config.block_size} "
                             "(serve at or below the trained block size)")
    runs = [(blk, lk) for blk in blocks for lk in dict.fromkeys(lookups)]
    seqs = replay_order(samples, max_len)
    hist = {k: torch.zeros(k[0], dtype=torch.long, device=target.device) for k in runs}
    row_tokens: dict[tuple[int, bool], list[int]] = {k: [] for k in runs}
    row_steps: dict[tuple[int, bool], list[int]] = {k: [] for k in runs}
    was_training = drafter.training
    drafter.eval()
    for i in range(0, len(seqs), batch_size):
        batch = seqs[i : i + batch_size]
        context = replay_context(drafter, target, batch, max_len, max(blocks))
        for k in runs:
            h, t, n = _replay(drafter, target, batch, k[0], max_len, context, k[1],
                              branches if k[1] else 1, plan, datastore)
            hist[k] += h
            row_tokens[k] += t.tolist()
            row_steps[k] += n.tolist()
    drafter.train(was_training)
    return {k: _result(hist[k].tolist(), row_tokens[k], row_steps[k], len(seqs)) for k in runs}


def _result(counts: list[int], row_tokens: list[int], row_steps: list[int],
            samples: int) -> TauResult:
    steps = sum(counts)
    tokens = sum((n + 1) * c for n, c in enumerate(counts))
    return TauResult(tau=tokens / steps if steps else float("nan"), steps=steps, tokens=tokens,
                     samples=samples, histogram=tuple(counts),
                     ci90=tau_interval(row_tokens, row_steps),
                     rows=tuple(zip(row_tokens, row_steps, strict=True)))


def format_interval(ci: tuple[float, float] | list[float] | None) -> str:
    """"3.42..6.65" for a report's table or log line; "-" where none was measured."""
    return f"{ci[0]:.2f}..{ci[1]:.2f}" if ci else "-"


def tau_interval(tokens: Sequence[int], steps: Sequence[int], level: float = 0.9,
                 n_boot: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap interval of tau = sum(tokens) / sum(steps), resampling whole
    sequences (turns). tau is a ratio dominated by a few long predictable answers (a reply the
    target loops on to max_tokens drafts ~14 tokens a step, a short confirmation ~2), so a
    handful of turns says little: on 16 held-out tool turns the 90% interval spans ~3.4..6.7
    (docs/history/notes/online-offline-tau.md). Seeded, so a report is reproducible."""
    if len(tokens) != len(steps):
        raise ValueError(f"tau_interval: {len(tokens)} token counts but {len(steps)} step counts; "
                         "expected one of each per sequence")
    if not 0 < level < 1:
        raise ValueError(f"tau_interval: level={level}, expected 0 < level < 1")
    t, s = np.asarray(tokens, dtype=np.float64), np.asarray(steps, dtype=np.float64)
    if t.size == 0 or s.sum() == 0:
        return (float("nan"), float("nan"))
    idx = np.random.default_rng(seed).integers(0, t.size, size=(n_boot, t.size))
    st = s[idx].sum(1)
    ratios = t[idx].sum(1)[st > 0] / st[st > 0]
    lo, hi = np.quantile(ratios, [(1 - level) / 2, (1 + level) / 2])
    return (float(lo), float(hi))


def tau_difference_interval(tokens: Sequence[int], steps_a: Sequence[int], steps_b: Sequence[int],
                            level: float = 0.9, n_boot: int = 2000,
                            seed: int = 0) -> tuple[float, float]:
    """Paired percentile-bootstrap interval of tau_b - tau_a for two drafters replayed on the
    same turns (same answers, so the same token counts; `steps_a`, `steps_b` their verify steps
    per turn). Resampling turns jointly cancels the spread between turns that both drafters
    share, so a difference much smaller than either tau's own interval can still be told from 0."""
    if not len(tokens) == len(steps_a) == len(steps_b):
        raise ValueError(f"tau_difference_interval: {len(tokens)} token counts, {len(steps_a)} and "
                         f"{len(steps_b)} step counts; expected one of each per turn")
    if not 0 < level < 1:
        raise ValueError(f"tau_difference_interval: level={level}, expected 0 < level < 1")
    t = np.asarray(tokens, dtype=np.float64)
    a, b = np.asarray(steps_a, dtype=np.float64), np.asarray(steps_b, dtype=np.float64)
    if t.size == 0 or a.sum() == 0 or b.sum() == 0:
        return (float("nan"), float("nan"))
    idx = np.random.default_rng(seed).integers(0, t.size, size=(n_boot, t.size))
    ta, sa, sb = t[idx].sum(1), a[idx].sum(1), b[idx].sum(1)
    ok = (sa > 0) & (sb > 0)
    diffs = ta[ok] / sb[ok] - ta[ok] / sa[ok]
    lo, hi = np.quantile(diffs, [(1 - level) / 2, (1 + level) / 2])
    return (float(lo), float(hi))


def _replay(drafter: DFlashDrafter, target: FrozenTarget, seqs: list[Sample], blk: int,
            max_len: int, context: ReplayContext, lookup: bool = False,
            branches: int = 1, plan: str = "first",
            datastore: TokenDatastore | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """One batch of sequences -> (histogram [blk] of tokens produced per step, tokens [b] and
    steps [b] per sequence)."""
    dev = target.device
    b = len(seqs)
    hist = torch.zeros(blk, dtype=torch.long, device=dev)
    row_tokens = torch.zeros(b, dtype=torch.long, device=dev)
    row_steps = torch.zeros(b, dtype=torch.long, device=dev)
    for step in replay_steps(drafter, target, seqs, blk, max_len, context, lookup,
                             branches=branches, plan=plan, datastore=datastore):
        hist += torch.bincount((step.produced - 1)[step.active], minlength=blk)
        row_tokens += torch.where(step.active, step.produced, 0)
        row_steps += step.active
    return hist, row_tokens, row_steps


@dataclass(slots=True, frozen=True)
class ReplayStep:
    """One greedy verify step of a replayed batch (rows whose sequence has ended are inactive)."""
    anchor: Tensor     # [b] the block's anchor position
    accepted: Tensor   # [b] drafts accepted (0..blk-1)
    produced: Tensor   # [b] tokens this step commits (accepted + bonus, cut at the end)
    active: Tensor     # [b] bool


@dataclass(slots=True, frozen=True)
class ReplayContext:
    """What a batch's replay needs from the target, whatever the block size: the drafter
    context K/V of every position, computed from one target forward."""
    ids: Tensor            # [b, width + pad] int64, zero-padded so block gathers stay in range
    start: Tensor          # [b] the first anchor (the prompt's length)
    end: Tensor            # [b] the last position
    ks: list[Tensor]       # per drafter layer, the context keys of every position
    vs: list[Tensor]
    dtype: torch.dtype     # the projected context's (the drafter's block runs in it)
    pad: int               # the largest block this context serves


def replay_context(drafter: DFlashDrafter, target: FrozenTarget, seqs: list[Sample],
                   max_len: int, pad: int) -> ReplayContext:
    """The target's taps for a batch, projected into the drafter's context K/V once."""
    dev = target.device
    lens = [min(len(s.input_ids), max_len) for s in seqs]
    width = max(lens)
    ids = torch.zeros(len(seqs), width + pad, dtype=torch.long)             # padded for gathers
    for r, (s, n) in enumerate(zip(seqs, lens, strict=True)):
        ids[r, :n] = torch.tensor(s.input_ids[:n])
    ids = ids.to(dev)
    b = len(seqs)
    with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=dev.type == "cuda"):
        taps = target.features(ids[:, :width])                             # [b, S, K*H]
        ctx = drafter.project_context(taps.to(drafter.dtype))
        kv = drafter.context_kv(ctx, torch.arange(width, device=dev).expand(b, width))
    return ReplayContext(ids, torch.tensor([s.prompt_len for s in seqs], device=dev),
                         torch.tensor(lens, device=dev) - 1, [k for k, _ in kv],
                         [v for _, v in kv], ctx.dtype, pad)


def replay_steps(drafter: DFlashDrafter, target: FrozenTarget, seqs: list[Sample], blk: int,
                 max_len: int, context: ReplayContext | None = None,
                 lookup: bool = False, pick: Pick | None = None,
                 branches: int = 1, plan: str = "first",
                 datastore: TokenDatastore | None = None) -> Iterator[ReplayStep]:
    """The greedy verify steps of one batch, in order: what `evaluate_tau` counts, step by step
    (scripts/analysis/tau_misses.py reads which token each step stopped at). `context`: the
    batch's `replay_context`, when several block sizes share it. `lookup`: each step verifies
    what the engine's planner picks (`PlannedPick`): the drafter's block or the prompt-lookup
    continuation and, with `branches` > 1, that many blocks a row (the drafter's swapped blocks
    planned by `plan`, `--spec-branch-plan`; the last a `datastore` draft if given,
    `--spec-datastore`), the one accepted furthest committed. `pick`: instead, each step's
    drafts are what pick(drafts, logits, anchor, active, accepted_of) returns, where
    accepted_of counts the drafts the target would accept of candidate blocks
    (scripts/analysis/lookup_oracle.py: the best choice)."""
    if lookup and pick is not None:
        raise ValueError("replay_steps: lookup and pick both given; expected one way to choose "
                         "the drafts")
    if branches < 1 or (branches > 1 and not lookup):
        raise ValueError(f"replay_steps: branches={branches}, lookup={lookup}; expected 1, or "
                         "more with lookup (the engine's branches ride on its lookup rule)")
    if context is None:
        context = replay_context(drafter, target, seqs, max_len, blk)
    if blk > context.pad:
        raise ValueError(f"block {blk}: the replay context was padded for blocks up to "
                         f"{context.pad}; expected a context built with pad >= {blk}")
    dev = target.device
    ids, end, anchor = context.ids, context.end, context.start
    if lookup:
        pick = PlannedPick(ids.tolist(), SpecOptions(lookup=True, branches=branches, plan=plan),
                           datastore)
    with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=dev.type == "cuda"):
        offs = torch.arange(blk, device=dev)
        while True:
            active = anchor < end                                          # [b]
            if not bool(active.any()):                                     # one sync per step
                break
            pos = anchor[:, None] + offs                                   # [b, blk]
            blocks = block_inputs(ids, anchor[:, None], blk, drafter.config.mask_token_id)[:, 0]
            h = drafter.forward_block(target.embed(blocks).to(context.dtype), pos, context.ks,
                                      context.vs, anchor)
            logits = target.logits(h[:, 1:])                               # [b, blk-1, V]
            drafts = logits.argmax(-1)                                     # [b, blk-1]
            truth, valid = ids.gather(1, pos[:, 1:]), pos[:, 1:] <= end[:, None]

            def accepted_of(cand: Tensor, rows: Tensor | None = None, truth: Tensor = truth,
                            valid: Tensor = valid) -> Tensor:
                t, v = (truth, valid) if rows is None else (truth[rows], valid[rows])
                return ((cand == t) & v).long().cumprod(-1).sum(-1)          # [n]

            if pick is not None:
                drafts = pick(drafts, logits, anchor, active, accepted_of)
            accepted = accepted_of(drafts)
            produced = torch.minimum(accepted + 1, end - anchor).clamp(min=1)
            yield ReplayStep(anchor, accepted, produced, active)
            anchor = torch.where(active, anchor + produced, anchor)
