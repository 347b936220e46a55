"""SpecOptions: how a speculative step chooses what it verifies, and its budget of verify rows.

One object for every caller of the speculation core: the embedded engine builds it from its
config (engine/local/spec_build.py), the offline τ replay from its arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

from turnspec.engine.spec.swaps import BRANCH_PLANS
from turnspec.engine.spec.width import WidthRule

MAX_BRANCHES = 16  # verify branches a greedy row may have (the planner's swaps stay cheap: swaps.py)


@dataclass(slots=True, frozen=True)
class SpecOptions:
    # verify a draft only while the drafter's cumulative probability of it stays >= this; 0
    # verifies whole blocks. Pays where a verify's cost grows with its length (a CPU)
    min_confidence: float = 0.0
    # a row takes the prompt-lookup continuation where the planner's rule says so (planner.py)
    lookup: bool = True
    lookup_below: float = 2.0  # ... among others, where the drafter expects fewer drafts
    # verify branches per greedy row: 1 verifies the chosen block only; more also the block the
    # lookup rule passed over, the drafter's block with drafts swapped (`plan`) and the datastore's
    branches: int = 1
    plan: str = "planned"  # swaps.py: "planned" (best-first tree) or "first" (the first draft)
    # at most this many extra verify rows a step over the whole batch; None: every branch of
    # every greedy row (`extra_row_budget`)
    max_extra_rows: int | None = None
    # None: every greedy row verifies all its branches (under max_extra_rows); a WidthRule:
    # as many as pay on this device at this step's batch (width.py)
    width: WidthRule | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.min_confidence < 1:
            raise ValueError(f"min_confidence: expected 0 <= value < 1, got {self.min_confidence}")
        if not isinstance(self.lookup, bool):
            raise ValueError(f"lookup: expected True or False, got {self.lookup!r}")
        if self.lookup_below < 0:
            raise ValueError(f"lookup_below: expected >= 0, got {self.lookup_below}")
        if isinstance(self.branches, bool) or not isinstance(self.branches, int) \
                or not 1 <= self.branches <= MAX_BRANCHES:
            raise ValueError(f"branches: expected an integer 1..{MAX_BRANCHES}, got {self.branches!r}")
        if self.plan not in BRANCH_PLANS:
            raise ValueError(f"plan: expected one of {BRANCH_PLANS}, got {self.plan!r}")
        if self.max_extra_rows is not None and (
                isinstance(self.max_extra_rows, bool) or not isinstance(self.max_extra_rows, int)
                or self.max_extra_rows < 1):
            raise ValueError(f"max_extra_rows: expected a positive integer or None, got "
                             f"{self.max_extra_rows!r}")
        if self.width is not None and not isinstance(self.width, WidthRule):
            raise ValueError(f"width: expected a WidthRule or None, got {self.width!r}")

    @property
    def extra(self) -> int:
        """Extra verify branches a greedy row may have."""
        return self.branches - 1

    def extra_row_budget(self, greedy_rows: int, other_rows: int = 0, block: int = 1) -> int:
        """Extra verify rows a step of `greedy_rows` greedy speculating rows (beside
        `other_rows` verifying one block, blocks of `block` tokens) may add: every branch of
        every such row, or with a width rule as many a row as pay (width.py); at most
        `max_extra_rows`. The planner hands them out by rank, every row's first before any
        row's second."""
        per_row = self.extra
        if self.width is not None:
            per_row = self.width.branches(greedy_rows, other_rows, block, self.branches) - 1
        return self._capped(per_row * greedy_rows)

    def most_extra_rows(self, max_batch: int) -> int:
        """The most extra rows any step of up to `max_batch` rows may verify (what scratch KV
        for the extra rows must hold): every branch of every row, at most `max_extra_rows`."""
        return self._capped(self.extra * max_batch)

    def _capped(self, rows: int) -> int:
        return rows if self.max_extra_rows is None else min(rows, self.max_extra_rows)
