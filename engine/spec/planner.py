"""The planner: which blocks each row of a speculative step verifies, under the step's budget of
verify rows. Pure functions of the proposers' outputs; no engine, no device.

Per row, in this order:
1. the chosen block: the drafter's, or the prompt-lookup continuation where `takes_lookup`
   says so;
2. with verify branches (greedy rows only, `SpecOptions.branches` > 1), extra blocks by rank
   (`row_candidates`): the block the lookup rule passed over, then the drafter's block with
   drafts swapped for its next guesses (swaps.py), then the datastore's continuation last;
3. the step's budget of extra rows (`SpecOptions.extra_row_budget`: every branch, a fixed cap,
   or as many as pay by a measured width rule, width.py) is handed out by rank: every row's
   first extra block before any row's second, so one stream verifies its whole tree and a full
   batch a few blocks a row.

Each block alone is verified exactly as a single block would be, and the row commits the one
accepted furthest (accept.py): greedy output stays the target's own. Sampled rows verify their
chosen block only: with several candidates the sampled acceptance rule would no longer keep the
target's distribution.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from turnspec.engine.spec.options import SpecOptions
from turnspec.engine.spec.proposers import Proposal, Proposer
from turnspec.engine.spec.proposers.drafter import DrafterBlocks
from turnspec.engine.spec.swaps import apply_swaps, first_swaps, plan_swaps
from turnspec.kernels.lookup_rule import wins

if TYPE_CHECKING:
    from torch import Tensor

# A lookup continuation whose first tokens are the drafter's own first drafts is taken even when
# the drafter is confident, if it runs longer: the drafter agrees with the copy, so the copy's
# tail is likely right too. 2 was best of 1-2 on seed-3 held-out turns (offline replay, B=16:
# τ 5.36 -> 5.58), and held on seed 4 (5.08 -> 5.24); docs/history/notes/drafter-run7-synthetic.md.
LOOKUP_AGREE = 2
# A continuation whose source matches the last 6+ tokens is a copy in progress (a tool call
# repeated from an earlier turn: 127 of SmolLM2's 171 calls on the independent voice turns) and
# is taken, however confident the drafter, when it offers more tokens than the drafter expects
# to land (expected + 1). Offline replay, default drafter, B=16, dev CPU: independent voice
# 4.26 -> 4.95 on 64 turns, 4.28 -> 4.90 on 48 others; 4 and 8 did no better (docs/history/dflash-2026-12.md).
LOOKUP_MATCH = 6


@dataclass(slots=True, frozen=True)
class RowInput:
    """What the planner knows of a row besides its proposals."""
    tokens: Sequence[int]   # the row's tokens so far, its anchor (the last committed) last
    width: int              # drafts it may verify (its block - 1); 0: it does not speculate
    greedy: bool            # only greedy rows verify extra branches


@dataclass(slots=True)
class StepPlan:
    """The blocks a step verifies: `blocks[i]` for row `owner[i]`; the first len(rows) are each
    row's chosen block, in row order, the extra blocks follow by rank. Blocks are the batch's
    width long, -1 past a block's drafts (never accepted)."""
    blocks: list[list[int]]
    owner: list[int]

    @property
    def verify_width(self) -> int:
        """Drafts in the longest block: the verify pass covers the anchor and this many."""
        return max((sum(1 for t in b if t >= 0) for b in self.blocks), default=0)


def lookup_wins(n: int | Tensor, agrees: bool | Tensor, verified: int | Tensor,
                expected: float | Tensor, below: float, match: int | Tensor) -> bool | Tensor:
    """The lookup rule itself, elementwise: on Python numbers for one row (`takes_lookup`), or
    on tensors for a batch where it is decided on the device (the SGLang plugin; its kernel
    runs the same arithmetic, kernels/lookup_rule.py). `n`: the continuation's length;
    `agrees`: its first LOOKUP_AGREE tokens are the drafter's own."""
    return wins(n, agrees, verified, expected, below, match, LOOKUP_MATCH)


def takes_lookup(cont: list[int], lead: list[int], verified: int, expected: float,
                 below: float, match: int = 0) -> bool:
    """The lookup continuation `cont` replaces the drafter's block when the drafter expects
    fewer than `below` accepted drafts, when `cont` starts with the drafter's own first
    LOOKUP_AGREE drafts (`lead`) and is longer than the `verified` drafts it would verify, or
    when its source matches the last `match` >= LOOKUP_MATCH tokens and it is longer than the
    drafter's expected accepted drafts plus one. A single copied token is not worth a swap."""
    return bool(lookup_wins(len(cont), cont[:LOOKUP_AGREE] == lead[:LOOKUP_AGREE], verified,
                            expected, below, match))


def row_candidates(chosen: list[int], own: list[int], cont: list[int],
                   swapped: list[list[int]], extra: int,
                   stored: list[int] | None = None) -> list[list[int]]:
    """Up to `extra` blocks a row verifies besides `chosen`, in this order: the block the lookup
    rule did not pick (the drafter's `own` where the lookup continuation `cont` was taken, else
    `cont` where it has 2+ tokens), then `swapped` (the drafter's block with drafts swapped);
    a datastore draft `stored` of 2+ tokens takes the last place. Repeats are skipped; -1 pads."""
    width, cands = len(own), []
    if chosen != own:
        cands.append(own)
    elif len(cont) >= 2:
        cands.append(cont + [-1] * (width - len(cont)))
    cands += swapped
    last = stored + [-1] * (width - len(stored)) if stored and len(stored) >= 2 else None
    if last == chosen:
        last = None
    out: list[list[int]] = []
    for cand in cands:
        if len(out) == extra - (last is not None):
            break
        if cand != chosen and cand != last and cand not in out:
            out.append(cand)
    return out + [last] if last is not None and extra > 0 else out


def swapped_blocks(drafted: DrafterBlocks, row: int, opts: SpecOptions, n: int) -> list[list[int]]:
    """Row `row`'s drafter block with drafts swapped for its next guesses, up to `n` blocks:
    the planned tree over the drafts it verifies (swaps.py), or its first draft swapped."""
    own = drafted.drafts[row]
    if opts.plan == "first":
        return first_swaps(own, drafted.guesses[row][0][: opts.extra])
    w = drafted.verified(row)
    probs, guesses, guess_p = drafted.probs[row], drafted.guesses[row], drafted.guess_probs[row]
    alts = [list(zip(guesses[d], guess_p[d], strict=True)) for d in range(w)]
    return [apply_swaps(own, sw) for _, sw in plan_swaps(probs[:w], alts, n)]


def plan_step(rows: list[RowInput], drafted: DrafterBlocks, opts: SpecOptions,
              lookup: Proposer | None = None, store: Proposer | None = None) -> StepPlan:
    """The blocks each row verifies (module docstring). `lookup`: the prompt-lookup proposer
    (used with `opts.lookup` or verify branches); `store`: the datastore's, for the last branch."""
    width = len(drafted.drafts[0]) if rows else 0
    chosen = [list(d) for d in drafted.drafts]
    conts: list[Proposal | None] = [None] * len(rows)
    if lookup is not None and (opts.lookup or opts.extra):
        conts = [lookup.propose(r.tokens, r.width) if r.width else None for r in rows]
    if opts.lookup:
        for i, cont in enumerate(conts):
            if cont is not None and takes_lookup(cont.tokens, drafted.argmax[i], drafted.verified(i),
                                                 drafted.expected[i], opts.lookup_below, cont.match):
                chosen[i] = cont.tokens + [-1] * (width - len(cont.tokens))
    plan = StepPlan(chosen, list(range(len(rows))))
    branching = [i for i, r in enumerate(rows) if r.width and r.greedy] if opts.extra else []
    if not branching:
        return plan
    budget = opts.extra_row_budget(len(branching), len(rows) - len(branching), width + 1)
    share = min(opts.extra, -(-budget // len(branching)))  # a row plans no more than its share
    per_row = []
    for i in branching:
        stored = store.propose(rows[i].tokens, rows[i].width).tokens if store is not None else []
        cont = conts[i].tokens if conts[i] is not None else []
        per_row.append((i, row_candidates(chosen[i], drafted.drafts[i], cont,
                                          swapped_blocks(drafted, i, opts, share), opts.extra,
                                          stored)))
    for rank in range(opts.extra):  # every row's first extra block, then every row's second...
        for i, cands in per_row:
            if rank < len(cands) and len(plan.owner) - len(rows) < budget:
                plan.blocks.append(cands[rank])
                plan.owner.append(i)
    return plan
