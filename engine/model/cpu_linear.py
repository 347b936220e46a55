"""CPU fast paths for fp32 linears, picked by the number of rows M.

- M == 1 (decode) and M > 32 (prefill): MKL's packed-weight GEMM (what Inductor's CPU
  freezing uses). 2-core dev machine, 2026-11-29, SmolLM2 lm_head 49152x576, M=1: F.linear
  23-29 ms vs packed 7-11 ms median/min over interleaved runs on a loaded machine (4.4 ms quiet).
- 2 <= M <= 32 (speculative verify and the drafter's block): oneDNN with its own blocked weight
  layout. Quiet machine, same LM head: M=8 16.5 ms MKL vs 9.0 oneDNN, M=16 18.5 vs 11.0; the
  576x1536 MLP matrix at M=8: 0.18 vs 0.16 ms. At prefill sizes oneDNN is no better.
Results match F.linear to ~1e-5 (accumulation order); no backend here is bitwise independent
of M (M=1 vs M=16 rows differ by ~5e-6 in all three), so plain decode and verify agree to the
same tolerance they did before. Only fp32 on CPU; other dtypes/devices keep F.linear.
"""

from __future__ import annotations

import torch
from torch import nn


def mkl_packed_available() -> bool:
    return hasattr(torch.ops.mkl, "_mkl_linear") and torch.backends.mkl.is_available()


SMALL_M = 32  # rows up to which oneDNN beats MKL's packed GEMM on the dev CPU


class MklPackedLinear(nn.Module):
    """Drop-in for a frozen fp32 nn.Linear on CPU (MKL packed for M=1 and prefill, oneDNN for
    2..SMALL_M rows)."""

    def __init__(self, linear: nn.Linear, batch_hint: int = 1) -> None:
        super().__init__()
        w = linear.weight.detach()
        if w.dtype != torch.float32 or w.device.type != "cpu":
            raise ValueError(f"MklPackedLinear: expected an fp32 CPU weight, got {w.dtype} on {w.device}")
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.register_buffer("weight", w, persistent=False)
        self.register_buffer("packed", torch.ops.mkl._mkl_reorder_linear_weight(w, batch_hint),
                             persistent=False)
        self.bias = None if linear.bias is None else linear.bias.detach()
        self.batch_hint = batch_hint
        self.dnn_weight = w.to_mkldnn() if torch.backends.mkldnn.is_available() else None
        self.dnn_bias = None if self.bias is None or self.dnn_weight is None else self.bias.to_mkldnn()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2 = x.reshape(-1, self.in_features)
        if self.dnn_weight is not None and 2 <= x2.shape[0] <= SMALL_M:
            out = torch._C._nn.mkldnn_linear(x2.contiguous().to_mkldnn(), self.dnn_weight,
                                             self.dnn_bias).to_dense()
        else:
            out = torch.ops.mkl._mkl_linear(x2, self.packed, self.weight, self.bias, self.batch_hint)
        return out.view(*shape[:-1], self.out_features)


def pack_linears(model: nn.Module) -> int:
    """Replace every fp32 CPU nn.Linear in `model` with MklPackedLinear; returns the count."""
    if not mkl_packed_available():
        return 0
    count = 0
    for module in list(model.modules()):
        for child_name, child in list(module.named_children()):
            if isinstance(child, nn.Linear) and child.weight.dtype == torch.float32 \
                    and child.weight.device.type == "cpu":
                setattr(module, child_name, MklPackedLinear(child))
                count += 1
    return count


def cpu_has_native_bf16() -> bool:
    """True where the CPU has bf16 dot-product instructions (AVX512-BF16 or AMX-BF16), so
    oneDNN's bf16 GEMM beats fp32: on the dev EPYC (Zen 4) the SmolLM2 LM head at M=16 takes
    7.2 ms in bf16 vs 19.8 ms fp32 (M=1: 3.5 vs 4.4 ms packed). Without them torch emulates bf16
    and it is slower than fp32."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "").split()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


class Bf16DraftHead(nn.Module):
    """The target's LM head in bf16, for the drafter's proposals only.

    Drafts are proposals that the target verifies with its own fp32 logits, so their precision
    never changes what is committed (greedy output stays identical; sampling stays exact)."""

    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("weight", weight.detach().to(torch.bfloat16), persistent=False)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        # 2-D and contiguous: a strided 3-D input sends F.linear to bmm over an expanded copy
        # of the whole [V, H] weight (55 ms a call at M=7 instead of ~5)
        x = hidden.reshape(-1, hidden.shape[-1]).to(torch.bfloat16).contiguous()
        return torch.nn.functional.linear(x, self.weight).view(*hidden.shape[:-1], -1)
