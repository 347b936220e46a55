"""One speculative step of the embedded engine, read top to bottom:

    draft  : one drafter pass proposes a block after each row's anchor (the pending token); its
             tokens, probabilities and next guesses come to the host in one copy
    plan   : the speculation core picks what each row verifies: its chosen block (the drafter's
             or a prompt-lookup continuation) and, for greedy rows, extra blocks under the step's
             budget of verify rows (engine/spec/planner.py)
    verify : one target pass over [anchor, block] of every planned block; a row's extra blocks
             ride as shadow rows over scratch KV (shadow_kv.py); the target's choice y_k at every
             position (argmax, or a sample from its filtered distribution, grammar-masked)
    accept : a block's accepted drafts a = leading k with d_{k+1} == y_k; a row keeps the block
             accepted furthest (engine/spec/accept.py)
    commit : tokens y_0..y_a (a accepted drafts + one bonus); the winning block's target KV and
             drafter context rows are kept.

Lossless: every committed y_k was chosen by the target from the exact prefix it would have
seen decoding one token at a time, so greedy output is identical and sampled output has the
target's distribution (the drafter is deterministic; sampled rows verify one block; see
docs/dflash.md §2). Rows the policy has paused (spec_policy.py) ride along with no drafts: a
plain step for them. Two host syncs a step: the draft's proposal and the accepted tokens.
"""

from __future__ import annotations

import time

import torch

from turnspec.engine.local.grammar_mask import mask_block
from turnspec.engine.local.runner import ExtendOutput, ModelRunner
from turnspec.engine.local.sampling import sample_rows
from turnspec.engine.local.sequence import Sequence
from turnspec.engine.local.shadow_kv import Shadow
from turnspec.engine.local.spec_build import Speculation
from turnspec.engine.spec.accept import furthest
from turnspec.engine.spec.planner import RowInput, plan_step
from turnspec.engine.spec.proposers.drafter import propose_drafts
from turnspec.kernels.dflash_accept import dflash_accept


def spec_decode(runner: ModelRunner, spec: Speculation,
                seqs: list[Sequence]) -> tuple[list[list[int]], list[int]]:
    """One speculative step for `seqs` (a decode batch): the tokens each row commits and how
    far each row's computed KV advances."""
    opts, policy = spec.options, spec.policy
    rows = [RowInput(s.token_ids, s.spec_block - 1 if policy.speculates(s) else 0,
                     s.request.sampling.greedy) for s in seqs]

    # draft: [b, W, V] logits -> each row's block on the host (host sync #1)
    logits = runner.draft(seqs, 1 + max(r.width for r in rows))
    drafted = propose_drafts(logits, [r.width for r in rows], min_confidence=opts.min_confidence,
                             probabilities=opts.lookup, guesses=opts.extra)

    # plan: the chosen block of every row, extra blocks for greedy rows under the budget
    plan = plan_step(rows, drafted, opts, spec.lookup, spec.store)

    # verify: one target pass over every planned block, extra blocks as shadow rows
    blocks = [b[: plan.verify_width] for b in plan.blocks]
    vseqs = [seqs[r] for r in plan.owner]
    shadows = spec.shadows.shadows(vseqs[len(seqs):], plan.verify_width + 1) \
        if len(vseqs) > len(seqs) else []
    out = runner.extend([(row, [s.token_ids[-1]] + [max(t, 0) for t in blk])  # -1 fed as 0
                         for row, s, blk in zip(seqs + shadows, vseqs, blocks, strict=True)])
    target = _targets(runner, out, vseqs, blocks)  # [n, W+1] the target's choice at each position

    # accept: each block's leading matches, then the block accepted furthest per row (sync #2)
    drafts = torch.tensor(blocks, dtype=torch.int64).reshape(len(blocks), plan.verify_width)
    accept_len, _bonus = dflash_accept(drafts.to(target.device), target)
    packed = torch.cat([accept_len.to(torch.int64).unsqueeze(1), target], dim=1).tolist()
    best = furthest(plan.owner, [p[0] for p in packed], len(seqs))

    # commit: the winning block's tokens, KV and drafter context rows
    _adopt(spec, seqs, shadows, best, packed)
    now = time.perf_counter()
    new_tokens, advance, ctx_items = [], [], []
    for r, (seq, row) in enumerate(zip(seqs, rows, strict=True)):
        a = packed[best[r]][0]
        new_tokens.append(packed[best[r]][1 : a + 2])
        advance.append(a + 1)
        ctx_items.append((seq, best[r], seq.num_computed, a + 1))
        if not row.width:
            policy.after_plain_step(seq)
            continue
        seq.spec.add_step(a + 1, now if seq.request.trace_steps else None)
        policy.after_spec_step(seq, a + 1)
    if out.taps is not None:
        runner.store_context(ctx_items, out.taps)
    return new_tokens, advance


def _targets(runner: ModelRunner, out: ExtendOutput, vseqs: list[Sequence],
             blocks: list[list[int]]) -> torch.Tensor:
    """The target's choice at every position of every verified block [n, W+1] int64: its
    argmax, or a sample from its filtered distribution, grammar-masked."""
    logits = runner.logits(out.hidden)  # [n, W+1, V] fp32
    mask_block(vseqs, logits, blocks)
    n, width = logits.shape[0], logits.shape[1]
    params = [s.request.sampling for s in vseqs for _ in range(width)]
    gens = [s.generator for s in vseqs for _ in range(width)]
    return sample_rows(logits.view(n * width, -1), params, gens).view(n, width)


def _adopt(spec: Speculation, seqs: list[Sequence], shadows: list[Shadow], best: list[int],
           packed: list[list[int]]) -> None:
    """Where a shadow row's block won, its KV for the committed positions becomes the
    sequence's (one copy for all of them)."""
    b = len(seqs)
    wins = [(seqs[r], shadows[i - b], packed[i][0] + 1) for r, i in enumerate(best) if i >= b]
    if wins:
        spec.shadows.adopt(wins)
