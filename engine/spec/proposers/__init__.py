"""Proposers: candidate blocks for a row, one file each, behind one small interface.

A host-side proposer (prompt lookup, the datastore, the learning datastore) implements
`Proposer.propose(tokens, width)`: from a row's tokens so far (its anchor, the last committed
token, last) up to `width` drafts, and how many of the row's last tokens its source matched
(the planner reads that as how specific the proposal is). The DFlash drafter runs on the
accelerator for the whole batch at once, so its proposal is a batch: `propose_drafts` turns the
drafter's logits into each row's block with its probabilities and next guesses (drafter.py).

Proposals are guesses the target verifies: none of them can change what a request receives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(slots=True, frozen=True)
class Proposal:
    """A candidate continuation of a row: `tokens` (at most the width asked for, maybe none)
    and how many of the row's last tokens its source matched (0: no source)."""
    tokens: list[int] = field(default_factory=list)
    match: int = 0


class Proposer(Protocol):
    def propose(self, tokens: Sequence[int], width: int) -> Proposal:
        """Up to `width` tokens that may follow `tokens`."""
        ...
