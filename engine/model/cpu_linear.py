"""CPU fast paths for fp32 linears, picked by the number of rows M.

- 1 <= M <= 32 (decode, speculative verify): the backend that `cpu_gemm_plan.measured_plan`
  chose on this CPU for M's bucket, among oneDNN, MKL packed and torch's F.linear (F.linear
  unless a packed one is clearly faster).
  oneDNN, with its own blocked weight layout, is called on dense activations
  (`mkldnn._linear_pointwise`: no per-call conversion of the input and output to oneDNN
  tensors, which cost ~3.5 ms a verify step over the 121 linears). Dev AMD EPYC,
  quiet, the 30 layers' linears summed (30 distinct weights, cold caches): M=1
  10.8 ms vs 17.7 MKL packed, M=8 18.6 vs 37.7; the 49152x576 LM head M=1 2.7 vs 4.0 ms,
  M=8 4.3 vs 11.5 (docs/history/notes/cpu-spec-step.md).
- M > 32 (prefill): MKL's packed-weight GEMM (what Inductor's CPU freezing uses); at prefill
  sizes oneDNN is no better.
Results match F.linear to ~1e-5 (accumulation order); no backend here is bitwise independent
of M (M=1 vs M=16 rows differ by ~5e-6 in all three), so plain decode and verify agree to the
same tolerance they did before. Only fp32 on CPU; other dtypes/devices keep F.linear.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch import nn

from turnspec.engine.model.cpu_gemm_plan import BACKENDS, ROW_BOUNDS, GemmPlan, measured_plan


def mkl_packed_available() -> bool:
    return hasattr(torch.ops.mkl, "_mkl_linear") and torch.backends.mkl.is_available()


SMALL_M = ROW_BOUNDS[-1]  # rows up to which a GemmPlan picks the backend; past it MKL packed


class MklPackedLinear(nn.Module):
    """Drop-in for a frozen fp32 nn.Linear on CPU: up to SMALL_M rows the backend `plan` picks
    (default: oneDNN, MKL packed where oneDNN is missing), MKL packed for prefill."""

    def __init__(self, linear: nn.Linear, batch_hint: int = 1,
                 plan: GemmPlan | None = None) -> None:
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
        self.plan = plan or GemmPlan.fixed("onednn" if self.dnn_weight is not None
                                           else "mkl_packed")
        if "onednn" in self.plan.choice and self.dnn_weight is None:
            raise ValueError("MklPackedLinear: the plan uses oneDNN, which this torch lacks")

    def gemm(self, x2: torch.Tensor, backend: str) -> torch.Tensor:
        """x2 [rows, in] fp32 -> [rows, out] through one backend (of cpu_gemm_plan.BACKENDS)."""
        if backend == "onednn":
            return torch.ops.mkldnn._linear_pointwise(x2.contiguous(), self.dnn_weight, self.bias,
                                                      "none", [], "")
        if backend == "mkl_packed":
            return torch.ops.mkl._mkl_linear(x2, self.packed, self.weight, self.bias,
                                             self.batch_hint)
        if backend == "torch":
            return F.linear(x2, self.weight, self.bias)
        raise ValueError(f"MklPackedLinear.gemm: expected a backend among {BACKENDS}, "
                         f"got {backend!r}")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2 = x.reshape(-1, self.in_features)
        rows = x2.shape[0]
        out = self.gemm(x2, self.plan.backend(rows))   # past SMALL_M: MKL packed (prefill)
        return out.view(*shape[:-1], self.out_features)


def _swap_linears(model: nn.Module, dtype: torch.dtype, make: type[nn.Module]) -> int:
    """Replace every CPU nn.Linear of `dtype` in `model` with make(linear); returns the count."""
    count = 0
    for module in list(model.modules()):
        for child_name, child in list(module.named_children()):
            if isinstance(child, nn.Linear) and child.weight.dtype == dtype \
                    and child.weight.device.type == "cpu":
                setattr(module, child_name, make(child))
                count += 1
    return count


CPU_GEMMS = ("auto", *BACKENDS)


def cpu_gemm_backends() -> tuple[str, ...]:
    """The small-row backends this torch has (MklPackedLinear keeps a oneDNN weight exactly
    where oneDNN is available)."""
    return BACKENDS if torch.backends.mkldnn.is_available() else ("mkl_packed", "torch")


def pack_linears(model: nn.Module, gemm: str = "auto") -> int:
    """Replace every fp32 CPU nn.Linear in `model` with MklPackedLinear; returns the count.
    `gemm` picks the backend for up to SMALL_M rows: "auto" times them on this model's weights
    (cpu_gemm_plan.measured_plan, cached per process), a backend's name fixes it."""
    if gemm not in CPU_GEMMS:
        raise ValueError(f"pack_linears: gemm expected one of {CPU_GEMMS}, got {gemm!r}")
    if not mkl_packed_available():
        return 0
    count = _swap_linears(model, torch.float32, MklPackedLinear)
    packed = [m for m in model.modules() if isinstance(m, MklPackedLinear)]
    if not packed:
        return count
    if gemm == "auto":
        plan = measured_plan(packed, [m.weight.numel() for m in packed], cpu_gemm_backends())
    else:
        plan = GemmPlan.fixed(gemm)
    use_gemm_plan(model, plan)
    return count


def gemm_plan(model: nn.Module) -> GemmPlan | None:
    """The GemmPlan of `model`'s packed fp32 linears (None: none packed)."""
    return next((m.plan for m in model.modules() if isinstance(m, MklPackedLinear)), None)


def describe_gemm_plan(model: nn.Module) -> dict[str, str] | None:
    """`gemm_plan(model).describe()` for benchmark JSON and tables (None: none packed)."""
    plan = gemm_plan(model)
    return None if plan is None else plan.describe()


def use_gemm_plan(model: nn.Module, plan: GemmPlan) -> None:
    """Give every packed fp32 linear of `model` this plan (an A/B between plans on one model)."""
    for m in model.modules():
        if isinstance(m, MklPackedLinear):
            m.plan = plan


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
    return ("avx512_bf16" in flags or "amx_bf16" in flags) and onednn_bf16_available()


@functools.cache
def onednn_bf16_available() -> bool:
    """Whether oneDNN runs the prepacked bf16 linears on this CPU at all: it needs AVX512-BW,
    -VL and -DQ or AVX-NE-CONVERT, and refuses the weight reorder without them (an AVX2-only
    EPYC, say). `cpu_has_native_bf16()` implies it."""
    try:
        bf16_prepacked(torch.zeros(8, 8), 1)
    except RuntimeError:
        return False
    return True


def bf16_prepacked(weight: torch.Tensor, batch_hint: int) -> torch.Tensor:
    """A bf16 copy of `weight` in oneDNN's blocked layout (`mkldnn._linear_pointwise` input)."""
    return torch.ops.mkldnn._reorder_linear_weight(weight.detach().to(torch.bfloat16).contiguous(),
                                                   batch_hint)


def bf16_linear(x: torch.Tensor, packed: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """x [..., in] -> bf16 [..., out] through a prepacked weight. The GEMM input is 2-D and
    contiguous: a strided 3-D input (the drafter's slots 1..) would otherwise be copied."""
    x2 = x.reshape(-1, x.shape[-1]).to(torch.bfloat16).contiguous()
    out = torch.ops.mkldnn._linear_pointwise(x2, packed, bias, "none", [], "")
    return out.view(*x.shape[:-1], -1)


class Bf16PackedLinear(nn.Module):
    """A frozen bf16 nn.Linear on a CPU with native bf16, its weight prepacked for oneDNN: the
    drafter's linears (dev AMD EPYC: the 4-layer block pass at B=8 3.95 -> 3.33 ms;
    docs/history/notes/cpu-spec-step.md)."""

    def __init__(self, linear: nn.Linear, batch_hint: int = 8) -> None:
        super().__init__()
        if linear.weight.device.type != "cpu":
            raise ValueError(f"Bf16PackedLinear: expected a CPU weight, got {linear.weight.device}")
        self.in_features, self.out_features = linear.in_features, linear.out_features
        # Only the packed copy is kept (callers read the drafter's dtype off DFlashDrafter.dtype):
        # a plain bf16 weight beside it would add ~31 MB for the SmolLM2 drafter.
        self.register_buffer("packed", bf16_prepacked(linear.weight, batch_hint), persistent=False)
        self.bias = None if linear.bias is None else linear.bias.detach().to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return bf16_linear(x, self.packed, self.bias)


def pack_bf16_linears(model: nn.Module) -> int:
    """Replace every bf16 CPU nn.Linear in `model` with Bf16PackedLinear; returns the count."""
    return _swap_linears(model, torch.bfloat16, Bf16PackedLinear)


class Bf16DraftHead(nn.Module):
    """The target's LM head in bf16 (prepacked for oneDNN), for the drafter's proposals only.

    Drafts are proposals that the target verifies with its own fp32 logits, so their precision
    never changes what is committed (greedy output stays identical; sampling stays exact).
    Logits come back in fp32: torch's bf16 argmax over 49k columns is a slow path (0.63 vs
    0.12 ms at 7 rows on the dev EPYC); the prepacked GEMM takes 1.3 ms there vs 2.1 F.linear."""

    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("packed", bf16_prepacked(weight, 8), persistent=False)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return bf16_linear(hidden, self.packed, None).float()
