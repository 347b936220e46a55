"""Block-hash prefix cache: matching, first-writer-wins registration, LRU eviction order."""

from __future__ import annotations

import pytest

from turnspec.engine.local.block_manager import BlockManager, chain_hash


def publish(bm: BlockManager, tokens: list[int]) -> list[int]:
    """Allocate blocks for `tokens`, register every full block, release them (a finished turn)."""
    n = bm.blocks_for(len(tokens))
    blocks = bm.allocate(n)
    parent = None
    for i in range(len(tokens) // bm.block_size):
        parent = chain_hash(parent, tokens[i * bm.block_size:(i + 1) * bm.block_size])
        bm.register(blocks[i], parent)
    bm.release(blocks)
    return blocks


def test_prefix_match_leaves_one_token_and_takes_refs() -> None:
    bm = BlockManager(8, 4)
    turn1 = list(range(12))  # three full blocks
    blocks = publish(bm, turn1)
    hit, hashes = bm.match_prefix(turn1)  # >= 1 token must stay uncomputed: only 2 blocks
    assert hit == blocks[:2] and len(hashes) == 2
    assert [bm.ref_count[b] for b in hit] == [1, 1]
    hit2, _ = bm.match_prefix(turn1 + [99, 98])  # a continuation reuses all three
    assert hit2 == blocks[:3]
    assert bm.match_prefix([7] + turn1)[0] == []  # a different first token shares nothing


def test_eviction_is_lru_and_tail_first() -> None:
    bm = BlockManager(4, 2)
    blocks = publish(bm, [1, 2, 3, 4, 5, 6])  # 3 blocks, released tail first
    assert bm.num_cached_free == 3
    fresh = bm.allocate(2)  # the never-used block, then the tail of the published sequence
    assert fresh[0] not in blocks and fresh[1] == blocks[2]
    hit, _ = bm.match_prefix([1, 2, 3, 4, 5, 6, 7])
    assert hit == blocks[:2]  # head survived


def test_exhaustion_and_clear_guard() -> None:
    bm = BlockManager(2, 4)
    held = bm.allocate(2)
    with pytest.raises(MemoryError, match="need 1 blocks, 0 free"):
        bm.allocate(1)
    with pytest.raises(RuntimeError, match="still referenced"):
        bm.clear()
    bm.release(held)
    bm.clear()
    assert bm.num_free == 2 and bm.num_cached_free == 0


def test_a_continuation_stays_on_consecutive_blocks() -> None:
    bm = BlockManager(16, 4)
    publish(bm, list(range(10)))                  # blocks 0, 1 cached; 2 (partial) uncached
    hit, _ = bm.match_prefix(list(range(10)) + [50, 51, 52, 53, 54])
    assert hit == [0, 1]
    table = hit + bm.allocate(3, after=hit[-1])   # 2 is free and holds no prefix: taken
    assert table == [0, 1, 2, 3, 4]
    bm.release(table)
    # the block after is cached: it is not taken out of LRU order (nothing is evicted for it)
    bm2 = BlockManager(8, 2)
    first = publish(bm2, [1, 2, 3, 4])           # blocks 0, 1 both cached
    other = bm2.allocate(1, after=first[0])      # 1 is cached: the LRU head (2) instead
    assert other == [2] and bm2.match_prefix([1, 2, 3, 4, 5])[0] == first
