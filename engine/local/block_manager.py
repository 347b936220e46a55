"""Paged KV block allocation with a block-hash prefix cache.

KV lives in fixed-size blocks. A *full* block of committed tokens is registered under a chain
hash — hash(parent block's hash, its token ids) — so any later sequence whose token prefix is
identical reuses it without prefill. That covers both cases voice agents care about:
  * a shared system prompt + tool schemas across sessions, and
  * conversation continuation: turn N's prompt starts with turn N-1's prompt + reply, so all
    of turn N-1's full blocks are hits.
Freed blocks keep their hash while they sit in the free list (LRU order) and are evicted only
when a new allocation needs them. Block-hash (not radix tree): simpler, O(blocks) matching,
and the same scheme vLLM uses; the cost is that the last partial block is recomputed.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence


def chain_hash(parent: int | None, tokens: Sequence[int]) -> int:
    return hash((parent, tuple(tokens)))


class BlockManager:
    def __init__(self, num_blocks: int, block_size: int) -> None:
        if num_blocks < 1 or block_size < 1:
            raise ValueError(f"num_blocks and block_size must be >= 1, got {num_blocks}, {block_size}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.ref_count = [0] * num_blocks
        self.clear()

    def clear(self) -> None:
        """Forget every cached prefix (benchmarks, tests). Only valid with no block in use."""
        if any(self.ref_count):
            raise RuntimeError("BlockManager.clear: blocks are still referenced by running sequences")
        num_blocks = self.num_blocks
        self.block_hash: list[int | None] = [None] * num_blocks
        self.hash_to_block: dict[int, int] = {}
        self.free: OrderedDict[int, None] = OrderedDict((i, None) for i in range(num_blocks))

    # -- queries -------------------------------------------------------------------------
    @property
    def num_free(self) -> int:
        return len(self.free)

    @property
    def num_cached_free(self) -> int:
        """Free blocks that still hold reusable prefix KV."""
        return sum(1 for b in self.free if self.block_hash[b] is not None)

    def blocks_for(self, num_tokens: int) -> int:
        return (num_tokens + self.block_size - 1) // self.block_size

    # -- prefix cache ----------------------------------------------------------------------
    def match_prefix(self, token_ids: Sequence[int]) -> tuple[list[int], list[int]]:
        """Longest run of cached full blocks for `token_ids`, leaving >= 1 token to compute.

        Returns (block ids, their chain hashes) and takes a reference on each block.
        """
        bs = self.block_size
        max_blocks = (len(token_ids) - 1) // bs
        blocks: list[int] = []
        hashes: list[int] = []
        parent: int | None = None
        for i in range(max_blocks):
            h = chain_hash(parent, token_ids[i * bs:(i + 1) * bs])
            b = self.hash_to_block.get(h)
            if b is None:
                break
            self._ref(b)
            blocks.append(b)
            hashes.append(h)
            parent = h
        return blocks, hashes

    def register(self, block: int, h: int) -> None:
        """Publish a full, committed block under its chain hash (first writer wins)."""
        if h not in self.hash_to_block:
            self.hash_to_block[h] = block
            self.block_hash[block] = h

    # -- allocation ------------------------------------------------------------------------
    def allocate(self, n: int, after: int | None = None) -> list[int]:
        """Take `n` blocks, least recently freed first (evicting their cached hash), except
        that the block right after the previous one (`after`: the sequence's last block) is
        taken when it is free and holds no cached prefix. A sequence whose blocks are
        consecutive ids is read in place by the CPU attention path instead of gathered;
        taking such a block out of LRU order evicts nothing."""
        if n > len(self.free):
            raise MemoryError(f"KV cache exhausted: need {n} blocks, {len(self.free)} free")
        out = []
        nxt = None if after is None else after + 1
        for _ in range(n):
            if nxt is not None and nxt in self.free and self.block_hash[nxt] is None:
                b = nxt
                del self.free[b]
            else:
                b, _ = self.free.popitem(last=False)
                h = self.block_hash[b]
                if h is not None:
                    if self.hash_to_block.get(h) == b:
                        del self.hash_to_block[h]
                    self.block_hash[b] = None
            self.ref_count[b] = 1
            out.append(b)
            nxt = b + 1
        return out

    def release(self, blocks: Sequence[int]) -> None:
        """Drop one reference per block; unreferenced blocks join the free list's tail (MRU).

        Released in reverse so that a sequence's *tail* blocks are evicted before its head:
        the head (system prompt, tools) is the most shareable part.
        """
        for b in reversed(blocks):
            self.ref_count[b] -= 1
            assert self.ref_count[b] >= 0, f"block {b} released twice"
            if self.ref_count[b] == 0:
                self.free[b] = None

    def _ref(self, b: int) -> None:
        if self.ref_count[b] == 0:
            del self.free[b]
        self.ref_count[b] += 1
