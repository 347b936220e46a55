"""The CPU attention path of AttentionBatch against the torch reference: one row on
consecutive blocks reads the pool in place (a slice), anything else gathers."""

from __future__ import annotations

import pytest
import torch

from turnspec.engine.model.attention import AttentionBatch
from turnspec.kernels.paged_attention import reference_paged_attention

BS, KVH, HEADS, HD = 4, 2, 6, 8


def _check(tables: list[list[int]], kv_lens: list[int], q_lens: list[int], in_place: bool):
    torch.manual_seed(len(tables) * 100 + sum(kv_lens))
    k_pool, v_pool = torch.randn(16, BS, KVH, HD), torch.randn(16, BS, KVH, HD)
    q = torch.randn(len(tables), max(q_lens), HEADS, HD)
    batch = AttentionBatch.build(tables, kv_lens, q_lens, BS, torch.device("cpu"))
    assert (batch.span is not None) == in_place and (batch.gather is None) == in_place
    got = batch.attend(q, k_pool, v_pool, HD ** -0.5)
    ref = reference_paged_attention(q, k_pool, v_pool, batch.block_tables, batch.kv_lens,
                                    batch.q_lens, HD ** -0.5)
    for r, n in enumerate(q_lens):                     # padded query slots are don't-care
        torch.testing.assert_close(got[r, :n], ref[r, :n])


@pytest.mark.parametrize("q_len", [1, 5])
def test_one_row_on_consecutive_blocks_is_read_in_place(q_len):
    _check([[3, 4, 5, 6]], [14], [q_len], in_place=True)     # decode / verify over 14 tokens
    _check([[7, 8, 9]], [9], [9], in_place=True)              # fresh prefill (causal)
    _check([[2, 3, 9]], [10], [q_len], in_place=False)        # a gap: gathered


def test_batches_gather():
    _check([[0, 1, 2], [5, 6, 7]], [10, 7], [1, 3], in_place=False)
