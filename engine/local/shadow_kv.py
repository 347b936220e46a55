"""Scratch KV for shadow rows: the extra blocks a step verifies (engine/spec/planner.py) run as
extra rows of the same target pass, each over its own copy of the anchor's KV block.

Why rows and not a tree mask: the embedded engine's attention reads a row's KV through its
block table, so a second block for a sequence is a second row whose table is the sequence's up
to the block holding the anchor, then scratch blocks reserved once at start (the first a copy
of the sequence's partial block: the KV before the anchor; the rest written by the verify).
Each row costs little where a verify is launch-bound (a GPU at small batch) and about a row's
compute where it is not (a CPU): CUDA verifies up to 16 blocks a row by default, a CPU one
(config.py `spec_branches`). When a shadow's block wins (engine/spec/accept.py), the KV of its
committed positions is copied into the sequence's own slots, and the drafter's context rows come
from its taps.
"""

from __future__ import annotations

from dataclasses import dataclass

from turnspec.engine.local.runner import ModelRunner
from turnspec.engine.local.sequence import Sequence


@dataclass(slots=True)
class Shadow:
    """What the verify pass reads of a sequence (`ModelRunner.extend`), for a second branch."""
    block_table: list[int]
    num_computed: int


class ShadowKV:
    """Scratch KV blocks for up to `max_rows` shadow rows of blocks up to `max_block` tokens:
    the runner's pool blocks from `first_block` on, kept out of the block manager's range (so
    its prefix cache and `clear` never see them; spec_build.py sizes it)."""

    def __init__(self, runner: ModelRunner, first_block: int, max_rows: int, max_block: int) -> None:
        if max_rows < 1 or max_block < 2:
            raise ValueError(f"ShadowKV: expected max_rows >= 1 and max_block >= 2, got "
                             f"{max_rows} and {max_block}")
        self.runner = runner
        self.per_row = self.blocks_per_row(runner.block_size, max_block)
        self.max_rows = max_rows
        pool_blocks = runner.k_pools.shape[1]
        need = self.per_row * max_rows
        if first_block < 0 or first_block + need > pool_blocks:
            raise ValueError(f"ShadowKV: {need} scratch blocks from block {first_block}, expected "
                             f"them within the runner's {pool_blocks} KV blocks")
        self.pool = list(range(first_block, first_block + need))

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
