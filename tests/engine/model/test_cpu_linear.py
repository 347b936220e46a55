"""CPU linear fast paths: every backend in every row-count regime (the plan's up to SMALL_M
rows, MKL packed at prefill sizes) matches F.linear; the prepacked bf16 linears and draft head
are bf16 GEMMs of the same weights."""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

from turnspec.engine.model.cpu_gemm_plan import BACKENDS, ROW_BOUNDS, GemmPlan
from turnspec.engine.model.cpu_linear import (
    CPU_GEMMS,
    SMALL_M,
    Bf16DraftHead,
    Bf16PackedLinear,
    MklPackedLinear,
    gemm_plan,
    mkl_packed_available,
    onednn_bf16_available,
    pack_bf16_linears,
    pack_linears,
)

pytestmark = pytest.mark.skipif(not mkl_packed_available(), reason="needs MKL")
needs_onednn_bf16 = pytest.mark.skipif(
    not onednn_bf16_available(), reason="oneDNN bf16 needs AVX512-BW/VL/DQ or AVX-NE-CONVERT")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("rows", [1, 2, 7, SMALL_M, SMALL_M + 1, 300])
def test_packed_linear_matches_f_linear(backend: str, bias: bool, rows: int) -> None:
    if backend == "onednn" and not torch.backends.mkldnn.is_available():
        pytest.skip("needs oneDNN")
    torch.manual_seed(rows)
    ref = nn.Linear(96, 160, bias=bias)
    fast = MklPackedLinear(ref, plan=GemmPlan.fixed(backend))
    x = torch.randn(rows, 96)
    torch.testing.assert_close(fast(x), ref(x), rtol=1e-5, atol=1e-5)
    x3 = torch.randn(1, rows, 96)[:, ::1]                    # leading dims are kept
    assert fast(x3).shape == (1, rows, 160)


@needs_onednn_bf16
def test_bf16_draft_head_takes_strided_input() -> None:
    w = torch.randn(500, 64)
    head = Bf16DraftHead(w)
    h = torch.randn(3, 9, 64)[:, 1:]                         # the drafter's slots 1.., strided
    out = head(h)
    assert out.shape == (3, 8, 500) and out.dtype == torch.float32  # fp32 for a fast argmax
    ref = torch.nn.functional.linear(h.reshape(-1, 64).bfloat16(), w.bfloat16()).view(3, 8, 500)
    torch.testing.assert_close(out, ref.float())


@needs_onednn_bf16
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("rows", [1, 7, 64])
def test_bf16_packed_linear_matches_bf16_f_linear(bias: bool, rows: int) -> None:
    torch.manual_seed(rows)
    ref = nn.Linear(96, 160, bias=bias).bfloat16()
    fast = Bf16PackedLinear(ref)
    x = torch.randn(2, rows, 96)[:, ::1]
    out = fast(x)
    assert out.shape == (2, rows, 160) and out.dtype == torch.bfloat16
    torch.testing.assert_close(out, ref(x.bfloat16()), rtol=1e-2, atol=1e-2)
    # only the packed copy stays: no plain weight beside it
    assert [n for n, _ in fast.named_buffers()] == ["packed"] and not list(fast.parameters())


@needs_onednn_bf16
def test_pack_bf16_linears_swaps_only_bf16_linears() -> None:
    model = nn.Sequential(nn.Linear(8, 8).bfloat16(), nn.Linear(8, 8), nn.LayerNorm(8))
    assert pack_bf16_linears(model) == 1
    assert isinstance(model[0], Bf16PackedLinear) and type(model[1]) is nn.Linear


def test_gemm_names_its_backends() -> None:
    fast = MklPackedLinear(nn.Linear(8, 4))
    with pytest.raises(ValueError, match="expected a backend among"):
        fast.gemm(torch.randn(2, 8), "blas")


def test_pack_linears_gives_every_linear_one_plan() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 96), nn.Linear(96, 64), nn.Linear(64, 500))
    x = torch.randn(3, 64)
    ref = model(x)
    assert pack_linears(model, "auto") == 3
    plan = gemm_plan(model)
    assert plan is not None and plan.source == "measured"
    assert all(m.plan is plan for m in model)               # one plan, shared
    assert set(plan.choice) <= set(BACKENDS) and len(plan.measured_ms) == len(ROW_BOUNDS)
    torch.testing.assert_close(model(x), ref, rtol=1e-5, atol=1e-5)
    other = nn.Sequential(nn.Linear(64, 96), nn.Linear(96, 64), nn.Linear(64, 500))
    pack_linears(other)
    assert gemm_plan(other) is plan                         # cached: same shapes, same process
    fixed = nn.Sequential(nn.Linear(8, 8))
    pack_linears(fixed, "torch")
    assert gemm_plan(fixed) == GemmPlan.fixed("torch")
    with pytest.raises(ValueError, match=re.escape(f"gemm expected one of {CPU_GEMMS}")):
        pack_linears(nn.Sequential(nn.Linear(8, 8)), "fastest")
