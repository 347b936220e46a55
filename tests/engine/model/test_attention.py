"""The CPU attention path of AttentionBatch against the torch reference: one row on
consecutive blocks reads the pool in place (a slice), one decoding row on a few runs of
consecutive blocks reads them in place run by run, anything else gathers."""

from __future__ import annotations

import pytest
import torch

from turnspec.engine.model.attention import MAX_RUNS, AttentionBatch, consecutive_runs
from turnspec.kernels.paged_attention import reference_paged_attention

BS, KVH, HEADS, HD = 4, 2, 6, 8


def _check(tables: list[list[int]], kv_lens: list[int], q_lens: list[int], path: str):
    torch.manual_seed(len(tables) * 100 + sum(kv_lens))
    k_pool, v_pool = torch.randn(32, BS, KVH, HD), torch.randn(32, BS, KVH, HD)
    q = torch.randn(len(tables), max(q_lens), HEADS, HD)
    batch = AttentionBatch.build(tables, kv_lens, q_lens, BS, torch.device("cpu"))
    taken = [name for name, x in (("span", batch.span), ("runs", batch.runs),
                                  ("gather", batch.gather)) if x is not None]
    assert taken == [path]
    got = batch.attend(q, k_pool, v_pool, HD ** -0.5)
    ref = reference_paged_attention(q, k_pool, v_pool, batch.block_tables, batch.kv_lens,
                                    batch.q_lens, HD ** -0.5)
    for r, n in enumerate(q_lens):                     # padded query slots are don't-care
        torch.testing.assert_close(got[r, :n], ref[r, :n])


@pytest.mark.parametrize("q_len", [1, 5])
def test_one_row_on_consecutive_blocks_is_read_in_place(q_len):
    _check([[3, 4, 5, 6]], [14], [q_len], "span")     # decode / verify over 14 tokens
    _check([[7, 8, 9]], [9], [9], "span")              # fresh prefill (causal)
    _check([[2, 3, 9]], [10], [q_len], "runs" if q_len == 1 else "gather")   # a gap


def test_one_decoding_row_on_runs_of_blocks_is_read_run_by_run():
    _check([[2, 3, 9, 10, 4]], [19], [1], "runs")      # 3 runs, the last block part-filled
    _check([[5, 1, 6, 0]], [13], [1], "runs")          # blocks out of order: 4 runs of one
    _check([[9, 10, 11, 30]], [12], [1], "span")       # the block past kv_len does not count
    scattered = list(range(0, 2 * (MAX_RUNS + 1), 2))  # every block its own run
    _check([scattered], [len(scattered) * BS - 1], [1], "gather")


def test_consecutive_runs():
    assert consecutive_runs([2, 3, 9], BS, 10) == [(8, 16), (36, 38)]
    assert consecutive_runs([2, 3, 9], BS, 8) == [(8, 16)]
    assert consecutive_runs([5, 4], BS, 5) == [(20, 24), (16, 17)]


def test_batches_gather():
    _check([[0, 1, 2], [5, 6, 7]], [10, 7], [1, 3], "gather")
    _check([[0, 1, 2], [5, 6, 7]], [10, 7], [1, 1], "gather")   # a batch of decoding rows
