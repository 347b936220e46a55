"""The lookup side of the offline τ replay (tau.py): which block each replayed step verifies
when the engine would take the prompt-lookup continuation (`with_lookup`, the engine's rule
with one verify branch), or verify several blocks and keep the one accepted furthest
(`BranchPick`, the engine's `--spec-branches N`, engine/local/branch.py)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from turnspec.engine.local.branch_plan import BRANCH_PLANS
from turnspec.engine.local.datastore import TokenDatastore
from turnspec.engine.local.ngram import ngram_lookup
from turnspec.engine.local.runner import next_firsts, next_guesses
from turnspec.engine.local.spec_policy import SpecPolicy
from turnspec.engine.local.spec_step import (
    LOOKUP_AGREE,
    branch_candidates,
    first_swaps,
    planned_swaps,
    takes_lookup,
)

LOOKUP_BELOW = SpecPolicy().lookup_below  # the engine's default


def lookup_continuations(host_ids: list[list[int]], anchor: Tensor, active: Tensor,
                         width: int) -> list[tuple[list[int], int]]:
    """Each row's `ngram_lookup` (continuation, match) over its tokens up to the anchor, at most
    `width` tokens; ([], 0) for inactive rows."""
    at, live = anchor.tolist(), active.tolist()
    return [ngram_lookup(host_ids[r][: at[r] + 1], width) if live[r] else ([], 0)
            for r in range(len(at))]


def with_lookup(drafts: Tensor, logits: Tensor, host_ids: list[list[int]], anchor: Tensor,
                active: Tensor, conts: list[tuple[list[int], int]] | None = None) -> Tensor:
    """drafts [b, blk-1] with each active row's block swapped for the prompt-lookup continuation
    of its tokens up to the anchor where `takes_lookup` says the engine would: the drafter
    expects fewer than LOOKUP_BELOW accepted drafts (the sum of the cumulative products of its
    draft probabilities), the continuation starts with its first drafts and is longer than
    the block it would verify (every draft: no confidence cut, as on CUDA), or its source
    matches the last LOOKUP_MATCH tokens and it offers more than the drafter expects. -1 pads a
    shorter continuation and is never accepted. `conts`: `lookup_continuations`, when the
    caller already has them."""
    width = drafts.shape[1]
    expected = logits.float().softmax(-1).amax(-1).cumprod(-1).sum(-1).tolist()
    if conts is None:
        conts = lookup_continuations(host_ids, anchor, active, width)
    rows, live = drafts.tolist(), active.tolist()
    for r, row in enumerate(rows):
        if not live[r]:
            continue
        cont, match = conts[r]
        if takes_lookup(cont, row[:LOOKUP_AGREE], width, expected[r], LOOKUP_BELOW, match):
            rows[r] = cont + [-1] * (width - len(cont))
    return torch.tensor(rows, dtype=drafts.dtype, device=drafts.device)


class BranchPick:
    """`replay_steps`' pick for `branches` verify branches a row: the lookup rule's block and
    the engine's other candidates (`branch_candidates`: the block the rule passed over, then
    the drafter's block with drafts swapped for its next guesses: its next most likely first
    tokens with plan "first", the best-first tree of branch_plan.py with "planned"; with a
    `datastore`, its draft in the last place), committing the one the target accepts furthest,
    as the engine does."""

    def __init__(self, host_ids: list[list[int]], branches: int, plan: str = "first",
                 datastore: TokenDatastore | None = None) -> None:
        if branches < 2:
            raise ValueError(f"BranchPick: branches={branches}, expected 2 or more")
        if plan not in BRANCH_PLANS:
            raise ValueError(f"BranchPick: plan={plan!r}, expected one of {BRANCH_PLANS}")
        self.host_ids, self.branches, self.plan = host_ids, branches, plan
        self.datastore = datastore

    def swapped(self, own: list[list[int]], logits: Tensor) -> list[list[list[int]]]:
        """Per row, the drafter's block with drafts swapped, as the engine builds them."""
        extra = self.branches - 1
        if self.plan == "first":
            firsts = next_firsts(logits, extra).tolist()
            return [first_swaps(o, f) for o, f in zip(own, firsts, strict=True)]
        return planned_swaps(own, *next_guesses(logits, extra), extra, [True] * len(own))

    def __call__(self, drafts: Tensor, logits: Tensor, anchor: Tensor, active: Tensor,
                 accepted_of: Callable[[Tensor], Tensor]) -> Tensor:
        width = drafts.shape[1]
        conts = lookup_continuations(self.host_ids, anchor, active, width)
        rule = with_lookup(drafts, logits, self.host_ids, anchor, active, conts)
        own, chosen = drafts.tolist(), rule.tolist()
        swapped = self.swapped(own, logits)
        at, live = anchor.tolist(), active.tolist()
        stored = [self.datastore.draft(self.host_ids[r][: at[r] + 1], width)
                  if self.datastore is not None and live[r] else [] for r in range(len(own))]
        cands = []
        for r in range(len(own)):
            extra = branch_candidates(chosen[r], own[r], conts[r][0], swapped[r],
                                      self.branches - 1, stored[r])
            cands.append([chosen[r], *extra] + [[-1] * width] * (self.branches - 1 - len(extra)))
        blocks = torch.tensor(cands, dtype=drafts.dtype, device=drafts.device)  # [b, N, w]
        accepted = torch.stack([accepted_of(blocks[:, k]) for k in range(self.branches)], -1)
        self.seen(drafts, conts, rule, accepted[:, 0], active, accepted_of)
        return blocks[torch.arange(len(own), device=drafts.device), accepted.argmax(-1)]

    def seen(self, drafts: Tensor, conts: list[tuple[list[int], int]], rule: Tensor,
             accepted_rule: Tensor, active: Tensor, accepted_of: Callable[[Tensor], Tensor]) -> None:
        """A hook on each step's blocks (scripts/analysis/lookup_oracle.py tallies the rule's
        misses); nothing here."""
