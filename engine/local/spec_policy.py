"""When a sequence speculates: its acceptance against the measured price of a spec step.

A speculative step costs `c` plain decode steps on this hardware (a drafter pass plus a
B-token verify) and yields tau tokens, so it pays only while tau > c. Each sequence keeps an
EMA of its tokens per spec step (seeded optimistic); while the EMA is below `pause_below * c`
(a clear loss, not break-even) the sequence decodes plainly for a back-off period that doubles
each time a probe fails (min_backoff .. max_backoff steps), then probes one spec step again.
Text the drafter cannot predict (generic chat at tau ~1.2, a one-off confirmation in a tool
turn) then runs at plain speed instead of paying for rejected drafts; predictable stretches
keep speculating.

Lossless either way: plain and speculative steps both commit the target's own choices.

`c` is measured, not configured: EMAs of the wall time of this engine's spec and plain steps
(`initial_cost` until both kinds have run). The ratio is exact at concurrency 1 (the voice
case); with a mixed batch a step is "spec" when any row speculates, so `c` is the batch's.
`mode="always"` speculates on every step (the pre-policy behaviour, for A/B benches). What a
speculating row verifies is the speculation core's choice (engine/spec/, `SpecOptions`).
"""

from __future__ import annotations

from dataclasses import dataclass

from turnspec.engine.local.config import SPEC_POLICY_MODES as MODES
from turnspec.engine.local.sequence import Sequence


@dataclass(slots=True)
class SpecPolicy:
    mode: str = "adaptive"
    initial_cost: float = 2.0      # spec step / plain step, until both are measured
    ema_alpha: float = 0.3         # weight of the newest spec step in a sequence's tau EMA
    # plain steps after the first unprofitable verdict. 1, not 4: a tool turn's misses are
    # short, and a first pause of 4 cost tool turns 6% against always-on speculation; with 1
    # the two are level and generic turns keep adaptive's gain (bench spec on CPU;
    # docs/history/notes/cpu-policy-backoff.md). Misses that run on still double the pause up
    # to max_backoff.
    min_backoff: int = 1
    # pause while the EMA is below pause_below x the price, not at break-even (1): on tool turns
    # a pause near break-even cost 1.5-5% against always-on speculation, while 0.75 kept level
    # with it and kept generic turns' gain (+4.7%; scripts/analysis/policy_ab.py on CPU:
    # docs/history/notes/pause-below.md).
    pause_below: float = 0.75
    max_backoff: int = 64
    time_alpha: float = 0.1        # weight of the newest step in the step-time EMAs
    spec_step_s: float | None = None
    plain_step_s: float | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"spec policy mode: expected one of {MODES}, got {self.mode!r}")
        if not (self.initial_cost >= 1.0 and 0 < self.ema_alpha <= 1 and 0 < self.time_alpha <= 1
                and 1 <= self.min_backoff <= self.max_backoff and 0 < self.pause_below <= 1):
            raise ValueError(f"spec policy: invalid parameters {self}")

    @property
    def cost(self) -> float:
        """Price of a spec step in plain steps (measured once both kinds have run)."""
        if self.spec_step_s is not None and self.plain_step_s:
            return self.spec_step_s / self.plain_step_s
        return self.initial_cost

    def speculates(self, seq: Sequence) -> bool:
        return seq.spec_block > 1 and (self.mode == "always" or seq.spec_pause == 0)

    def after_spec_step(self, seq: Sequence, committed: int) -> None:
        prev = seq.spec_ema if seq.spec_ema is not None else self.cost + 1.0
        seq.spec_ema = (1.0 - self.ema_alpha) * prev + self.ema_alpha * committed
        if seq.spec_ema < self.pause_below * self.cost:
            seq.spec_backoff = min(max(2 * seq.spec_backoff, self.min_backoff), self.max_backoff)
            seq.spec_pause = seq.spec_backoff
        else:
            seq.spec_backoff = 0

    def after_plain_step(self, seq: Sequence) -> None:
        if seq.spec_pause > 0:
            seq.spec_pause -= 1

    def record_step(self, speculative: bool, seconds: float) -> None:
        a = self.time_alpha
        if speculative:
            self.spec_step_s = seconds if self.spec_step_s is None else (1 - a) * self.spec_step_s + a * seconds
        else:
            self.plain_step_s = seconds if self.plain_step_s is None else (1 - a) * self.plain_step_s + a * seconds
