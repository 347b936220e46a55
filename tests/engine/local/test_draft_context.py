"""FusedContextKV (one GEMM for every drafter layer's context K/V) == the layer-by-layer path."""

from __future__ import annotations

import pytest
import torch

from turnspec.engine.drafter.config import DFlashConfig
from turnspec.engine.drafter.model import DFlashDrafter
from turnspec.engine.local.draft_context import FusedContextKV
from turnspec.engine.model.cpu_linear import (
    cpu_has_native_bf16,
    mkl_packed_available,
    pack_bf16_linears,
    pack_linears,
)

CFG = DFlashConfig(hidden_size=48, num_layers=3, num_heads=4, num_kv_heads=2, head_dim=8,
                   intermediate_size=64, rms_norm_eps=1e-6, rope_theta=10000.0, block_size=4,
                   mask_token_id=1, target_layer_ids=(0, 2), num_target_layers=4, vocab_size=50)


def _drafter(dtype: torch.dtype) -> DFlashDrafter:
    torch.manual_seed(0)
    d = DFlashDrafter(CFG)
    for layer in d.layers:  # norms away from 1, so a mixed-up layer order would show
        layer.self_attn.k_norm.weight.data.uniform_(0.5, 1.5)
    return d.to(dtype).eval()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_fused_equals_layer_by_layer(dtype: torch.dtype) -> None:
    d = _drafter(dtype)
    fused = FusedContextKV(d)
    ctx = torch.randn(5, CFG.hidden_size).to(dtype)
    pos = torch.tensor([0, 7, 8, 9, 300])
    tol = {torch.float64: 1e-12, torch.float32: 1e-5, torch.bfloat16: 3e-2}[dtype]
    with torch.inference_mode():
        ref, got = d.context_kv(ctx, pos), fused(ctx, pos)
    assert len(got) == CFG.num_layers
    for (rk, rv), (gk, gv) in zip(ref, got, strict=True):
        assert gk.shape == rk.shape == (5, CFG.num_kv_heads, CFG.head_dim) and gk.dtype == dtype
        torch.testing.assert_close(gk, rk, atol=tol, rtol=tol)
        torch.testing.assert_close(gv, rv, atol=tol, rtol=tol)


@pytest.mark.skipif(not cpu_has_native_bf16(), reason="prepacked bf16 needs AVX512-BF16/AMX")
def test_prepacked_bf16_matches_the_packed_drafter() -> None:
    d = _drafter(torch.bfloat16)
    fused = FusedContextKV(d)
    assert fused.packed is not None
    pack_bf16_linears(d)  # what the engine does next: the drafter keeps only packed weights
    ctx, pos = torch.randn(4, CFG.hidden_size).to(torch.bfloat16), torch.arange(10, 14)
    with torch.inference_mode():
        for (rk, rv), (gk, gv) in zip(d.context_kv(ctx, pos), fused(ctx, pos), strict=True):
            torch.testing.assert_close(gk, rk, atol=3e-2, rtol=3e-2)
            torch.testing.assert_close(gv, rv, atol=3e-2, rtol=3e-2)


def test_a_biased_drafter_is_refused() -> None:
    d = _drafter(torch.float32)
    d.layers[1].self_attn.k_proj = torch.nn.Linear(CFG.hidden_size, 16, bias=True)
    assert not FusedContextKV.fusable(d)
    with pytest.raises(ValueError, match="bias-free nn.Linear"):
        FusedContextKV(d)


@pytest.mark.skipif(not mkl_packed_available(), reason="torch built without MKL packed GEMM")
def test_an_already_prepacked_drafter_is_not_fusable() -> None:
    packed = _drafter(torch.float32)
    assert pack_linears(packed) > 0            # what an engine does before the fused path
    assert not FusedContextKV.fusable(packed)
