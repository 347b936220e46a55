"""Multi-branch verify for greedy rows: several candidate blocks verified side by side in one
target pass, the row keeping whichever the target accepts furthest (`--spec-branches N`).

Why: the lookup rule (spec_step.takes_lookup) must pick the drafter's block or the prompt-lookup
continuation before the target has seen either, and the drafter's first draft is where a block
most often fails on text it was not trained on. Replayed on the independent voice turns, the
best pick of the two per step adds +0.20 tokens per verify step over the rule (4.95 -> 5.14,
scripts/analysis/lookup_oracle.py, docs/dflash.md); the drafter's block under its second..
fourth most likely first tokens adds more on generic chat (docs/dflash.md). Each branch is one
more row in the verify batch, which costs little where a verify is launch-bound (a GPU at small
batch) and about a row's compute where it is not (a CPU). So CUDA verifies three by default
and a CPU one (config.py `spec_branches`).

How: each extra branch runs as a shadow row. Its block table is the sequence's up to the block
holding the anchor, then scratch blocks reserved once at start: the first a copy of the
sequence's partial block (the KV before the anchor), the rest written by the verify. When a
shadow wins, the KV of its committed positions is copied into the sequence's own slots, and the
drafter's context rows come from its taps. Greedy rows only: with several candidates the sampled
acceptance rule would no longer keep the target's distribution, and greedy is exact by
construction (every committed token is the target's argmax from the exact prefix).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from turnspec.engine.local.branch_plan import BRANCH_PLANS
from turnspec.engine.local.datastore import TokenDatastore
from turnspec.engine.local.datastore_learn import LearningDatastore
from turnspec.engine.local.runner import ModelRunner
from turnspec.engine.local.sequence import Sequence


@dataclass(slots=True)
class Shadow:
    """What the verify pass reads of a sequence (`ModelRunner.extend`), for a second branch."""
    block_table: list[int]
    num_computed: int


class Branches:
    """Scratch KV blocks for up to `max_rows` shadow rows of blocks up to `max_block` tokens:
    the runner's pool blocks from `first_block` on, kept out of the block manager's range (so
    its prefix cache and `clear` never see them; core.py sizes it). `per_seq`: the verify
    branches a sequence may have, its own row included (spec_step.py)."""

    def __init__(self, runner: ModelRunner, first_block: int, max_rows: int, max_block: int,
                 per_seq: int = 2, plan: str = "first",
                 datastore: TokenDatastore | LearningDatastore | None = None) -> None:
        if max_rows < 1 or max_block < 2 or per_seq < 2:
            raise ValueError(f"Branches: expected max_rows >= 1, max_block >= 2 and per_seq >= 2, "
                             f"got {max_rows}, {max_block} and {per_seq}")
        if plan not in BRANCH_PLANS:
            raise ValueError(f"Branches: plan={plan!r}, expected one of {BRANCH_PLANS}")
        self.runner = runner
        self.plan = plan  # which drafts the drafter's swapped blocks swap (branch_plan.py)
        self.datastore = datastore  # a row's last extra branch drafts from it (datastore.py)
        self.extra = per_seq - 1  # shadow rows a sequence may have
        self.per_row = self.blocks_per_row(runner.block_size, max_block)
        self.max_rows = max_rows
        pool_blocks = runner.k_pools.shape[1]
        need = self.per_row * max_rows
        if first_block < 0 or first_block + need > pool_blocks:
            raise ValueError(f"Branches: {need} scratch blocks from block {first_block}, expected "
                             f"them within the runner's {pool_blocks} KV blocks")
        self.pool = list(range(first_block, first_block + need))

    def limited(self, per_seq: int, plan: str | None = None, datastore: bool = True) -> Branches:
        """These scratch blocks, for at most `per_seq` branches a sequence, planned by `plan`
        (None: this one's), without the datastore branch unless `datastore`; bench spec
        compares branch counts, plans and the datastore on one engine."""
        if not 2 <= per_seq <= self.extra + 1:
            raise ValueError(f"limited: per_seq={per_seq}, expected 2..{self.extra + 1}")
        if plan is not None and plan not in BRANCH_PLANS:
            raise ValueError(f"limited: plan={plan!r}, expected one of {BRANCH_PLANS}")
        out = copy.copy(self)
        out.extra = per_seq - 1
        out.plan = plan or self.plan
        out.datastore = self.datastore if datastore else None
        return out

    @staticmethod
    def blocks_per_row(block_size: int, max_block: int) -> int:
        """KV blocks a verify of up to `max_block` tokens can touch from its anchor's block on."""
        return (block_size - 1 + max_block - 1) // block_size + 1

    def shadows(self, seqs: list[Sequence], block: int) -> list[Shadow]:
        """A shadow of each of `seqs` (at most max_rows) for a verify of `block` tokens: the
        sequence's blocks before the anchor's, then scratch, the first holding a copy of the
        anchor's block."""
        if len(seqs) > self.max_rows:
            raise ValueError(f"shadows: {len(seqs)} rows, expected at most {self.max_rows}")
        bs, out, src, dst = self.runner.block_size, [], [], []
        for i, seq in enumerate(seqs):
            first = seq.num_computed // bs
            need = (seq.num_computed + block - 1) // bs - first + 1
            if need > self.per_row:
                raise ValueError(f"shadows: a block of {block} needs {need} scratch blocks, "
                                 f"expected at most {self.per_row}")
            scratch = self.pool[i * self.per_row : i * self.per_row + need]
            src.append(seq.block_table[first])
            dst.append(scratch[0])
            out.append(Shadow(seq.block_table[:first] + scratch, seq.num_computed))
        if src:
            self.runner.copy_kv_blocks(src, dst)
        return out

    def adopt(self, wins: list[tuple[Sequence, Shadow, int]]) -> None:
        """Each (sequence, shadow, count): the shadow won, and its KV for the `count` positions
        from the anchor on becomes the sequence's (one copy for all of them)."""
        src, dst = [], []
        for seq, shadow, count in wins:
            src += self.runner.slots(shadow, seq.num_computed, count)
            dst += self.runner.slots(seq, seq.num_computed, count)
        if src:
            self.runner.copy_kv_slots(src, dst)
