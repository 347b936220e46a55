"""The speculation core as the offline τ replay runs it (tau.py `replay_steps`): at each replayed
step, the blocks the engine would verify, planned by the engine's own planner from the same
proposers (the drafter's block and next guesses, prompt lookup, the datastore:
engine/spec/), and the block the target accepts furthest committed, as the engine commits it.
So the replay's τ is the served τ, step for step, up to floating-point ties between the
replay's one full target pass and the engine's incremental ones."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from turnspec.engine.spec.accept import furthest
from turnspec.engine.spec.options import SpecOptions
from turnspec.engine.spec.planner import RowInput, StepPlan, plan_step
from turnspec.engine.spec.proposers import Proposer
from turnspec.engine.spec.proposers.drafter import propose_drafts
from turnspec.engine.spec.proposers.lookup import PromptLookup

LOOKUP_BELOW = SpecOptions().lookup_below  # the engine's default

# accepted_of(candidates [n, w], rows [n] or None) -> [n] drafts the target would accept of
# each candidate block, a block of row rows[i] (None: block i is row i's)
AcceptedOf = Callable[..., Tensor]


def lookup_continuations(host_ids: list[list[int]], anchor: Tensor, active: Tensor,
                         width: int) -> list[tuple[list[int], int]]:
    """Each row's prompt-lookup (continuation, match) over its tokens up to the anchor, at most
    `width` tokens; ([], 0) for inactive rows."""
    at, live, lookup = anchor.tolist(), active.tolist(), PromptLookup()
    out = []
    for r in range(len(at)):
        p = lookup.propose(host_ids[r][: at[r] + 1], width) if live[r] else None
        out.append((p.tokens, p.match) if p is not None else ([], 0))
    return out


class PlannedPick:
    """`replay_steps`' pick: each step's blocks planned as the engine plans them under
    `options` (the replay verifies whole blocks: no confidence cut, every branch, no row cap),
    the furthest accepted committed. `store`: the datastore branch's proposer."""

    def __init__(self, host_ids: list[list[int]], options: SpecOptions,
                 store: Proposer | None = None) -> None:
        if options.min_confidence > 0 or options.max_extra_rows is not None:
            raise ValueError(f"PlannedPick: {options}; expected whole blocks and every branch "
                             "(min_confidence 0, no row cap), as the replay scores a drafter")
        self.host_ids, self.options, self.store = host_ids, options, store
        self.lookup = PromptLookup()

    def plan(self, logits: Tensor, anchor: Tensor, active: Tensor) -> StepPlan:
        """The engine's plan for this step: greedy rows, each as wide as the block."""
        width = logits.shape[1]
        at, live = anchor.tolist(), active.tolist()
        rows = [RowInput(self.host_ids[r][: at[r] + 1], width if live[r] else 0, True)
                for r in range(len(at))]
        opts = self.options
        drafted = propose_drafts(logits, [r.width for r in rows], probabilities=opts.lookup,
                                 guesses=opts.extra)
        return plan_step(rows, drafted, opts, self.lookup, self.store)

    def __call__(self, drafts: Tensor, logits: Tensor, anchor: Tensor, active: Tensor,
                 accepted_of: AcceptedOf) -> Tensor:
        plan = self.plan(logits, anchor, active)
        blocks = torch.tensor(plan.blocks, dtype=drafts.dtype, device=drafts.device)  # [n, w]
        owner = torch.tensor(plan.owner, device=drafts.device)
        accepted = accepted_of(blocks, owner)
        b = drafts.shape[0]
        best = furthest(plan.owner, accepted.tolist(), b)
        self.seen(drafts, blocks[:b], accepted[:b], anchor, active, accepted_of)
        return blocks[torch.tensor(best, device=drafts.device)]

    def seen(self, drafts: Tensor, rule: Tensor, accepted_rule: Tensor, anchor: Tensor,
             active: Tensor, accepted_of: AcceptedOf) -> None:
        """A hook on each step: the drafter's blocks, the chosen ones and how far those were
        accepted (scripts/analysis/lookup_oracle.py tallies the lookup rule's misses); nothing
        here."""
