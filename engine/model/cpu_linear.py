"""CPU fast path for fp32 linears: MKL's packed-weight GEMM (what Inductor's CPU freezing uses).

Measured on the 2-core dev machine (2026-11-29, SmolLM2 lm_head 49152x576, M=1):
F.linear 23-29 ms vs packed 7-11 ms median/min over interleaved runs — decode is GEMV-bound,
and the packed layout streams the weights at close to memory bandwidth. Results match
F.linear to ~1e-4 (accumulation order). Only fp32 on CPU; other dtypes/devices keep F.linear.
"""

from __future__ import annotations

import torch
from torch import nn


def mkl_packed_available() -> bool:
    return hasattr(torch.ops.mkl, "_mkl_linear") and torch.backends.mkl.is_available()


class MklPackedLinear(nn.Module):
    """Drop-in for a frozen fp32 nn.Linear on CPU."""

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

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2 = x.reshape(-1, self.in_features)
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
