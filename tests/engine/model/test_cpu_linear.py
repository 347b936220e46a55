"""CPU fp32 linear fast paths: every row-count regime (MKL packed at M=1 and prefill sizes,
oneDNN in between) matches F.linear; the bf16 draft head is a bf16 GEMM of the same weight."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from turnspec.engine.model.cpu_linear import (
    SMALL_M,
    Bf16DraftHead,
    MklPackedLinear,
    mkl_packed_available,
)

pytestmark = pytest.mark.skipif(not mkl_packed_available(), reason="needs MKL")


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("rows", [1, 2, 7, SMALL_M, SMALL_M + 1, 300])
def test_packed_linear_matches_f_linear(bias: bool, rows: int) -> None:
    torch.manual_seed(rows)
    ref = nn.Linear(96, 160, bias=bias)
    fast = MklPackedLinear(ref)
    x = torch.randn(rows, 96)
    torch.testing.assert_close(fast(x), ref(x), rtol=1e-5, atol=1e-5)
    x3 = torch.randn(1, rows, 96)[:, ::1]                    # leading dims are kept
    assert fast(x3).shape == (1, rows, 160)


def test_bf16_draft_head_takes_strided_input() -> None:
    w = torch.randn(500, 64)
    head = Bf16DraftHead(w)
    h = torch.randn(3, 9, 64)[:, 1:]                         # the drafter's slots 1.., strided
    out = head(h)
    assert out.shape == (3, 8, 500) and out.dtype == torch.bfloat16
    ref = torch.nn.functional.linear(h.reshape(-1, 64).bfloat16(), w.bfloat16()).view(3, 8, 500)
    torch.testing.assert_close(out, ref)
