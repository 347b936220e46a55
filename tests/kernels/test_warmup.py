"""warm_up runs every paged-attention variant (tile shape x split or not x combine pad) and the
accept kernel; on CUDA nothing compiles afterwards at new context lengths or split counts."""

from __future__ import annotations

import pytest
import torch

from turnspec.kernels import warmup
from turnspec.kernels.jit_stats import compiled_variants
from turnspec.kernels.warmup import warm_up


def test_warm_up_covers_tiles_splits_and_draft_lengths() -> None:
    calls = warm_up(9, 3, 64, 16, torch.float32, "cpu", draft_lengths=(15,))
    # tiles (16, 5), (32, 10), (64, 21): the first with no split and 6 combine pads, the others
    # split or not; one accept length
    assert calls == 7 + 2 + 2 + 1
    with pytest.raises(ValueError, match="multiple"):
        warm_up(9, 2, 64, 16, torch.float32, "cpu")


def test_query_counts_sharing_a_tile_are_warmed_once(monkeypatch) -> None:
    """16 and 64 queries share the (64, 21) tile at 3 heads a group: one set of launches. The
    launches are recorded, not run: the test above runs every variant through the interpreter,
    and 7 more 64-row launches there cost ~30 s of CI for no new variant."""
    launched = []
    monkeypatch.setattr(warmup, "_attend", lambda n_q, splits, *rest: launched.append((n_q, splits)))
    assert warm_up(9, 3, 64, 16, torch.float32, "cpu", q_sizes=(16, 64)) == 7
    assert launched == [(64, s) for s in (1, 2, 4, 8, 16, 32, 64)]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="compiles only on CUDA")
def test_no_compile_after_warm_up_on_cuda() -> None:
    from turnspec.kernels.paged_attention import triton_paged_attention

    warm_up(9, 3, 64, 16, torch.bfloat16, "cuda", draft_lengths=(15,))
    before = compiled_variants()
    page, blocks = 16, 300
    pool = torch.randn(blocks, page, 3, 64, dtype=torch.bfloat16, device="cuda")
    table = torch.arange(blocks, dtype=torch.int32, device="cuda").unsqueeze(0)
    for kv_len, n_q, splits in ((1037, 1, None), (2311, 1, None), (4097, 16, None),
                                (777, 8, 3), (4500, 1, 37), (900, 200, None)):
        q = torch.randn(1, n_q, 9, 64, dtype=torch.bfloat16, device="cuda")
        lens = lambda v: torch.tensor([v], dtype=torch.int32, device="cuda")  # noqa: E731
        triton_paged_attention(q, pool, pool, table, lens(kv_len), lens(n_q), 0.125,
                               kv_lens_host=[kv_len], num_splits=splits)
    torch.cuda.synchronize()
    assert compiled_variants() == before
