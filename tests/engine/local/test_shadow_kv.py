"""ShadowKV: a shadow row's block table and scratch KV for an extra verify block, and the copy
of a winning block's KV into the sequence's own slots. The choice of blocks itself, end to end
and greedy-identical, is in test_spec_step.py."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from tests.engine.tiny import make_drafter, make_target, make_tokenizer
from turnspec.engine.local.config import LocalEngineConfig
from turnspec.engine.local.core import EngineCore
from turnspec.engine.local.shadow_kv import ShadowKV


@pytest.fixture()
def core(tmp_path: Path) -> EngineCore:
    target = make_target(tmp_path, 12, 0)
    cfg = LocalEngineConfig(model_dir=str(target), dtype="float64", block_size=4,
                            kv_memory_gb=0.05, max_batch=4, spec_branches=2)
    return EngineCore(cfg, tokenizer=make_tokenizer(12), drafter=make_drafter(target, 8, 0))


def test_shadow_shares_the_prefix_and_copies_the_anchor_block(core: EngineCore) -> None:
    """Anchor at position 9 with 4-token blocks: blocks 0-1 are shared, block 2 (positions
    8..11, of which 8 is already computed) is copied to scratch, and a verify of 8 tokens
    (positions 9..16) reaches two more scratch blocks (12..15, 16)."""
    runner, branches = core.runner, core.speculation.shadows
    assert branches is not None and branches.per_row == 3  # (4 - 1 + 8 - 1) // 4 + 1
    runner.k_pools.normal_()
    runner.v_pools.normal_()
    table = core.blocks.allocate(5)
    seq = SimpleNamespace(block_table=table, num_computed=9)
    (shadow,) = branches.shadows([seq], 8)
    assert shadow.num_computed == 9
    assert shadow.block_table[:2] == table[:2]
    scratch = shadow.block_table[2:]
    assert scratch == branches.pool[:3] and not set(scratch) & set(table)
    assert torch.equal(runner.k_pools[:, scratch[0]], runner.k_pools[:, table[2]])
    assert torch.equal(runner.v_pools[:, scratch[0]], runner.v_pools[:, table[2]])
    with pytest.raises(ValueError, match="at most 4"):
        branches.shadows([seq] * 5, 8)


def test_adopt_copies_the_committed_positions_only(core: EngineCore) -> None:
    runner, branches = core.runner, core.speculation.shadows
    table = core.blocks.allocate(5)
    seq = SimpleNamespace(block_table=table, num_computed=9)
    (shadow,) = branches.shadows([seq], 8)
    runner.k_pools.zero_()
    runner.v_pools.zero_()
    for p in range(9, 17):  # the shadow's verify wrote positions 9..16
        blk, off = shadow.block_table[p // 4], p % 4
        runner.k_pools[:, blk, off] = p
        runner.v_pools[:, blk, off] = -p
    branches.adopt([(seq, shadow, 3)])  # anchor + 2 accepted drafts: positions 9, 10, 11
    for p in range(9, 17):
        blk, off = table[p // 4], p % 4
        want = p if p < 12 else 0
        assert float(runner.k_pools[0, blk, off, 0, 0]) == want, p
        assert float(runner.v_pools[-1, blk, off, -1, -1]) == -want, p


def test_scratch_lies_past_the_block_manager(core: EngineCore) -> None:
    """The scratch blocks are the runner's last ones, outside the block manager's range: the
    prefix cache never hands them out and `clear` (benchmarks) is not blocked by them."""
    pool_blocks = core.runner.k_pools.shape[1]
    assert core.speculation.shadows.pool == list(range(core.blocks.num_blocks, pool_blocks))
    assert len(core.speculation.shadows.pool) == 4 * core.speculation.shadows.per_row
    core.blocks.clear()
    with pytest.raises(ValueError, match=f"within the runner's {pool_blocks} KV blocks"):
        ShadowKV(core.runner, pool_blocks - 1, 4, 8)
