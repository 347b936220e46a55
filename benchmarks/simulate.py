"""The token-timing model of `turnspec simulate`: one decode step and one DFlash step (draft +
verify) of a transformer target, predicted by a per-step roofline, and tokens per second from
τ (DFlash paper Eq. 1-3). Pure arithmetic, no torch; the equations and every assumption are in
docs/simulate.md.

    t(pass)  = max(bytes / bandwidth, flops / peak_flops) + overhead_ms
    t_AR     = t(target pass, q=1)         T_verify = t(target pass, q=B)
    T_draft  = t(drafter pass over the block [anchor, MASK x (B-1)])
    c = T_draft / t_AR, v = T_verify / t_AR, speedup η = τ / (c + v),
    tok/s per user = τ / (T_draft + T_verify), over all users x concurrency b.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from turnspec.benchmarks.simulate_shapes import DrafterShape, TransformerShape

DEFAULT_OVERHEAD_MS = 0.15


@dataclass(slots=True, frozen=True)
class Hardware:
    """A device for the roofline: memory bandwidth (B/s) and peak dense FLOP/s at the
    weights' dtype."""

    name: str
    bandwidth: float
    peak_flops: float

    def __post_init__(self) -> None:
        if not self.bandwidth > 0 or not self.peak_flops > 0:
            raise ValueError(f"hardware {self.name}: expected bandwidth and peak FLOP/s > 0, got "
                             f"{self.bandwidth:g} B/s and {self.peak_flops:g} FLOP/s")


# Spec sheets: HBM bandwidth and dense bf16 tensor-core peak (no sparsity).
HARDWARE: dict[str, Hardware] = {
    "h100": Hardware("h100", bandwidth=3.35e12, peak_flops=989e12),  # SXM5 80 GB HBM3
    "h200": Hardware("h200", bandwidth=4.8e12, peak_flops=989e12),
    "b200": Hardware("b200", bandwidth=8.0e12, peak_flops=2.25e15),
}


def hardware(name: str, bandwidth_gbs: float | None = None,
             peak_tflops: float | None = None) -> Hardware:
    """A preset, with a measured bandwidth (GB/s) or peak (TFLOP/s) in place of the sheet's."""
    if name not in HARDWARE:
        raise ValueError(f"--hardware {name!r}: expected one of {', '.join(HARDWARE)}")
    hw = HARDWARE[name]
    return Hardware(name, bandwidth=hw.bandwidth if bandwidth_gbs is None else bandwidth_gbs * 1e9,
                    peak_flops=hw.peak_flops if peak_tflops is None else peak_tflops * 1e12)


# -- τ (docs/dflash.md §3) ------------------------------------------------------------------

def tau_from_alphas(alphas: Sequence[float]) -> float:
    """τ = 1 + Σ_{k=1}^{B-1} Π_{j<=k} α_j, for the B-1 per-position acceptance rates α_k
    (each the chance slot k is accepted given every slot before it was)."""
    if any(not 0 <= a <= 1 for a in alphas):
        raise ValueError(f"acceptance rates: expected values in [0, 1], got {list(alphas)}")
    tau, run = 1.0, 1.0
    for a in alphas:
        run *= a
        tau += run
    return tau


def tau_iid(alpha: float, block: int) -> float:
    """τ for one acceptance rate α at every slot: (1 - α^B) / (1 - α); B when α = 1."""
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha: expected a rate in [0, 1], got {alpha}")
    return float(block) if alpha == 1 else (1 - alpha ** block) / (1 - alpha)


def alpha_from_tau(tau: float, block: int) -> float:
    """The i.i.d. α whose τ at block B is `tau` (bisection; τ(α) rises from 1 to B)."""
    if block < 2:
        raise ValueError(f"block: expected >= 2, got {block}")
    if not 1 <= tau <= block:
        raise ValueError(f"tau {tau}: expected 1 <= tau <= B = {block} (tokens per step, bonus "
                         "included, at most the block)")
    lo, hi = 0.0, 1.0
    for _ in range(60):  # 2^-60: far below any τ we print
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if tau_iid(mid, block) < tau else (lo, mid)
    return (lo + hi) / 2


def tau_at_block(tau: float, measured_block: int, block: int) -> float:
    """τ measured at `measured_block`, carried to a block no larger: solve the i.i.d. α from it,
    then τ(B) = (1 - α^B) / (1 - α), which never exceeds B."""
    if block > measured_block:
        raise ValueError(f"block {block}: expected at most the block tau was measured at "
                         f"({measured_block}); tau cannot be carried to a larger block")
    if block == measured_block:
        alpha_from_tau(tau, block)  # validates 1 <= tau <= B
        return tau
    return tau_iid(alpha_from_tau(tau, measured_block), block)


# -- the per-step roofline -------------------------------------------------------------------

@dataclass(slots=True, frozen=True)
class StepTime:
    """One forward pass: what it moves and computes, and the time the roofline gives it."""

    bytes: float
    flops: float
    memory_ms: float
    compute_ms: float
    overhead_ms: float

    @property
    def ms(self) -> float:
        return max(self.memory_ms, self.compute_ms) + self.overhead_ms

    @property
    def bound(self) -> str:
        return "memory" if self.memory_ms >= self.compute_ms else "compute"

    def to_dict(self) -> dict[str, Any]:
        return {"ms": self.ms, "bytes": self.bytes, "flops": self.flops, "bound": self.bound,
                "memory_ms": self.memory_ms, "compute_ms": self.compute_ms,
                "overhead_ms": self.overhead_ms}


def target_work(t: TransformerShape, batch: int, q: int, ctx: float, weight_bytes: float,
                kv_bytes: float) -> tuple[float, float]:
    """(bytes, flops) of a target pass over q new tokens in each of `batch` rows at context ctx:
    weights read once (layers, final norm, LM head; the embedding only as the b*q gathered
    rows), the rows' KV read, the new KV written; every matmul and the LM head on b*q tokens,
    attention of b*q queries over ctx positions."""
    tokens = batch * q
    weights = (t.read_params + tokens * t.hidden_size) * weight_bytes
    kv_read = batch * t.attended(ctx) * t.kv_width * kv_bytes
    kv_written = tokens * t.num_layers * t.kv_width * kv_bytes
    flops = (2 * t.matmul_params * tokens
             + 4 * tokens * t.attended(ctx) * t.num_heads * t.head_dim)
    return weights + kv_read + kv_written, flops


def draft_work(d: DrafterShape, t: TransformerShape, batch: int, block: int, ctx: float,
               context_rows: float, weight_bytes: float, kv_bytes: float) -> tuple[float, float]:
    """(bytes, flops) of a drafter pass: the block [anchor, MASK x (B-1)] of each row through the
    drafter's layers against its context KV, the target's LM head (read again) on the B-1 draft
    slots, and `context_rows` newly committed positions per row through fc and each layer's
    k/v projections into the drafter's context KV."""
    s = d.layers
    tokens, new_rows = batch * block, batch * context_rows
    weights = (d.params + t.lm_head_params + tokens * t.hidden_size) * weight_bytes
    kv_read = batch * s.attended(ctx) * s.kv_width * kv_bytes
    kv_written = new_rows * s.num_layers * s.kv_width * kv_bytes
    flops = (2 * s.num_layers * s.layer_matmul_params * tokens
             + 2 * (d.fc_params + s.num_layers * s.hidden_size * s.kv_width) * new_rows
             + 2 * t.lm_head_params * batch * (block - 1)
             + 4 * tokens * s.attended(ctx + block) * s.num_heads * s.head_dim)
    return weights + kv_read + kv_written, flops


@dataclass(slots=True, frozen=True)
class Prediction:
    """One (concurrency, block) point: t_AR, and with a drafter T_draft and T_verify; with τ,
    tokens per second and the speedup."""

    concurrency: int
    block: int | None
    context: float
    decode: StepTime
    draft: StepTime | None = None
    verify: StepTime | None = None
    tau: float | None = None

    @property
    def c(self) -> float | None:
        return self.draft.ms / self.decode.ms if self.draft else None

    @property
    def v(self) -> float | None:
        return self.verify.ms / self.decode.ms if self.verify else None

    @property
    def spec_ms(self) -> float | None:
        return self.draft.ms + self.verify.ms if self.draft and self.verify else None

    @property
    def tok_s_user(self) -> float | None:
        """τ / (T_draft + T_verify); plain decoding's 1 / t_AR without a drafter."""
        if self.spec_ms is None:
            return 1000.0 / self.decode.ms
        return None if self.tau is None else 1000.0 * self.tau / self.spec_ms

    @property
    def tok_s_total(self) -> float | None:
        per_user = self.tok_s_user
        return None if per_user is None else per_user * self.concurrency

    @property
    def speedup(self) -> float | None:
        """η = τ / (c + v) = t_AR / L."""
        if self.tau is None or self.c is None or self.v is None:
            return None
        return self.tau / (self.c + self.v)

    def to_dict(self) -> dict[str, Any]:
        return {"concurrency": self.concurrency, "block": self.block, "context": self.context,
                "t_ar": self.decode.to_dict(),
                "t_draft": self.draft.to_dict() if self.draft else None,
                "t_verify": self.verify.to_dict() if self.verify else None,
                "c": self.c, "v": self.v, "tau": self.tau, "tok_s_user": self.tok_s_user,
                "tok_s_total": self.tok_s_total, "speedup": self.speedup}


@dataclass(slots=True, frozen=True)
class Simulation:
    """A target (and drafter) on a device: the roofline's inputs, validated once."""

    target: TransformerShape
    drafter: DrafterShape | None
    hardware: Hardware
    overhead_ms: float = DEFAULT_OVERHEAD_MS  # launch/scheduling per pass (docs/simulate.md)
    weight_bytes: float = 2.0                  # bf16 weights
    kv_bytes: float = 2.0                      # bf16 KV cache

    def __post_init__(self) -> None:
        if not self.overhead_ms >= 0:
            raise ValueError(f"overhead_ms: expected >= 0, got {self.overhead_ms}")
        if not (self.weight_bytes > 0 and self.kv_bytes > 0):
            raise ValueError(f"weight_bytes, kv_bytes: expected > 0, got {self.weight_bytes}, "
                             f"{self.kv_bytes}")
        if self.drafter is not None:
            self.drafter.check_target(self.target)

    def step(self, work: tuple[float, float]) -> StepTime:
        nbytes, flops = work
        return StepTime(bytes=nbytes, flops=flops,
                        memory_ms=1000.0 * nbytes / self.hardware.bandwidth,
                        compute_ms=1000.0 * flops / self.hardware.peak_flops,
                        overhead_ms=self.overhead_ms)

    def decode(self, batch: int, ctx: float) -> StepTime:
        """t_AR: a plain decode step, one token per row."""
        return self.step(target_work(self.target, batch, 1, ctx, self.weight_bytes, self.kv_bytes))

    def verify(self, batch: int, block: int, ctx: float) -> StepTime:
        """T_verify: the target over the B tokens [anchor, d_1..d_{B-1}] of each row."""
        return self.step(target_work(self.target, batch, block, ctx, self.weight_bytes,
                                     self.kv_bytes))

    def draft(self, batch: int, block: int, ctx: float, context_rows: float) -> StepTime:
        """T_draft: one drafter pass (the drafter's shape must be set)."""
        assert self.drafter is not None
        return self.step(draft_work(self.drafter, self.target, batch, block, ctx, context_rows,
                                    self.weight_bytes, self.kv_bytes))

    def predict(self, concurrency: int, block: int | None, ctx: float, tau: float | None = None,
                context_rows: float | None = None) -> Prediction:
        """One point. `tau` is τ at this block; `context_rows`, the committed positions per row
        that the drafter projects into its context this step, defaults to τ (what one step
        commits on average), or 1 without τ."""
        if concurrency < 1 or ctx < 0:
            raise ValueError(f"concurrency {concurrency}, context {ctx}: expected >= 1 and >= 0")
        plain = self.decode(concurrency, ctx)
        if self.drafter is None or block is None:
            return Prediction(concurrency, None, ctx, plain)
        if block < 2:
            raise ValueError(f"block {block}: expected >= 2 (the anchor and at least one draft)")
        rows = context_rows if context_rows is not None else (tau if tau is not None else 1.0)
        return Prediction(concurrency, block, ctx, plain,
                          draft=self.draft(concurrency, block, ctx, rows),
                          verify=self.verify(concurrency, block, ctx), tau=tau)


def projection(sim: Simulation, block: int, ctx: float, tau: float,
               published_tok_s: float | None = None, extra_spec_ms: float = 0.0) -> dict[str, Any]:
    """tok/s for one user = τ / (c + v) x the plain step rate 1 / t_AR, and its ratio to a
    published figure. extra_spec_ms: a measured per-step cost the roofline leaves out, counted
    with the drafter's share c (simulate_fit's calibration)."""
    p = sim.predict(1, block, ctx, tau)
    assert p.spec_ms is not None and p.verify is not None
    t_ar, spec = p.decode.ms, p.spec_ms + extra_spec_ms
    tok_s = 1000.0 * tau / spec
    return {"block": block, "context": ctx, "tau": tau, "c": (spec - p.verify.ms) / t_ar,
            "v": p.verify.ms / t_ar, "step_rate": 1000.0 / t_ar,
            "tok_s": tok_s, "published_tok_s": published_tok_s,
            "ratio_to_published": tok_s / published_tok_s if published_tok_s else None}
