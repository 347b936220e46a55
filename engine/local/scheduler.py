"""Continuous batching: each step is a prefill batch (new requests, admitted while tokens,
slots and KV blocks allow) or a decode batch (every running request advances by one token,
or by one speculative block). Prefill goes first, as in nano-vllm: a new turn's first token
is what a voice agent waits for. Offline (datagen), `admit_min_free` holds prefill back until
that many batch slots are free, so decode steps stay full and one prefill step admits many
requests instead of one each time a row finishes. Out of KV, the newest running request is preempted: its
blocks go back to the free list *with their hashes*, so its recompute is mostly cache hits.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from turnspec.engine.local.block_manager import BlockManager, chain_hash
from turnspec.engine.local.sequence import Sequence, Status


@dataclass(slots=True)
class ScheduledBatch:
    kind: str  # "prefill" | "decode"
    seqs: list[Sequence]


class Scheduler:
    def __init__(self, blocks: BlockManager, max_batch: int, max_prefill_tokens: int,
                 spec_lookahead: int, admit_min_free: int = 1) -> None:
        self.blocks = blocks
        self.max_batch = max_batch
        self.admit_min_free = admit_min_free
        self.max_prefill_tokens = max_prefill_tokens
        self.spec_lookahead = spec_lookahead  # extra KV slots a decode step may write
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []

    def add(self, seq: Sequence) -> None:
        self.waiting.append(seq)

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def schedule(self) -> ScheduledBatch | None:
        batch = self._schedule_prefill()
        if batch is not None:
            return batch
        return self._schedule_decode()

    def _schedule_prefill(self) -> ScheduledBatch | None:
        free = self.max_batch - len(self.running)
        if self.running and free < min(self.admit_min_free, len(self.waiting)):
            return None  # decode on; admit when enough slots are free (or all waiting fit)
        chosen: list[Sequence] = []
        budget = self.max_prefill_tokens
        while self.waiting and len(self.running) + len(chosen) < self.max_batch:
            seq = self.waiting[0]
            if not self._admit(seq, budget if chosen else None):
                break
            self.waiting.popleft()
            budget -= len(seq.token_ids) - seq.num_computed
            chosen.append(seq)
        if not chosen:
            return None
        now = time.perf_counter()
        for seq in chosen:
            seq.status = Status.RUNNING
            if not seq.t_scheduled:
                seq.t_scheduled = now
        self.running.extend(chosen)
        return ScheduledBatch("prefill", chosen)

    def _admit(self, seq: Sequence, budget: int | None) -> bool:
        """Match the prefix cache and allocate blocks for the rest of the prompt.

        `budget` None means "first of the batch": always admitted if KV fits, however long.
        """
        cached, hashes = self.blocks.match_prefix(seq.token_ids)
        n_cached = len(cached) * self.blocks.block_size
        todo = len(seq.token_ids) - n_cached
        need = self.blocks.blocks_for(len(seq.token_ids) + self.spec_lookahead) - len(cached)
        if (budget is not None and todo > budget) or need > self.blocks.num_free:
            self.blocks.release(cached)
            return False
        seq.block_table = cached + self.blocks.allocate(need, after=cached[-1] if cached else None)
        seq.block_hashes = hashes
        seq.num_computed = n_cached
        if not seq.timing.cached_tokens:  # first admission (not a preemption recompute)
            seq.timing.cached_tokens = n_cached
        return True

    def _schedule_decode(self) -> ScheduledBatch | None:
        if not self.running:
            return None
        for seq in list(self.running):
            if seq.status is not Status.RUNNING:
                continue
            need = self.blocks.blocks_for(len(seq.token_ids) + self.spec_lookahead) - len(seq.block_table)
            while need > self.blocks.num_free:
                victim = self.running[-1]
                self.preempt(victim)
                if victim is seq:
                    break
            if seq.status is Status.RUNNING and need > 0:
                seq.block_table += self.blocks.allocate(
                    need, after=seq.block_table[-1] if seq.block_table else None)
        seqs = [s for s in self.running if s.status is Status.RUNNING]
        return ScheduledBatch("decode", seqs) if seqs else None

    def preempt(self, seq: Sequence) -> None:
        self.running.remove(seq)
        self.blocks.release(seq.block_table)
        seq.block_table, seq.block_hashes, seq.num_computed = [], [], 0
        seq.status = Status.WAITING
        self.waiting.appendleft(seq)

    def commit(self, seq: Sequence) -> None:
        """Register newly full, committed blocks in the prefix cache."""
        bs = self.blocks.block_size
        while (len(seq.block_hashes) + 1) * bs <= seq.num_computed:
            i = len(seq.block_hashes)
            parent = seq.block_hashes[-1] if seq.block_hashes else None
            h = chain_hash(parent, seq.token_ids[i * bs:(i + 1) * bs])
            self.blocks.register(seq.block_table[i], h)
            seq.block_hashes.append(h)

    def finish(self, seq: Sequence) -> None:
        """Free a finished or aborted sequence's blocks (hashed ones stay reusable)."""
        if seq in self.running:
            self.running.remove(seq)
        elif seq in self.waiting:
            self.waiting.remove(seq)
        self.blocks.release(seq.block_table)
        seq.block_table = []
        seq.status = Status.FINISHED
