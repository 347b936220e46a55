"""What a load-test run is asked (`RunConfig`, validated as built: the CLI's flags name the
fields in its errors) and what it gives back (`RunResult`, the records and the client's own
health), apart from the loop that drives it (runner.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from turnspec.loadtest.record import RequestRecord


@dataclass(slots=True, frozen=True)
class RunConfig:
    concurrency: int | None = None  # closed loop
    rate: float | None = None  # open loop, turns per second
    burstiness: float = 1.0
    max_concurrency: int | None = None
    duration_s: float | None = None
    requests: int | None = None  # measured turns
    warmup: int = 0
    barge_in: float = 0.0  # fraction of turns cancelled after `barge_in_after` chunks
    barge_in_after: int = 8
    seed: int = 0
    rtt_probe: bool = True
    temperature: float | None = 0.0
    tool_choice: str = "script"  # "script": required where the workload calls a tool; "auto"
    # "grammar": tools sent with tool_choice above; "prompt": sent with tool_choice "none"
    # (in the prompt, no grammar, no call parsing); "none": no tools sent
    tool_mode: str = "grammar"
    timeout_s: float = 120.0  # per turn
    grace_s: float = 30.0  # after the last dispatch, for turns in flight
    max_consecutive_failures: int = 50
    burn_loop_ms: float = 0.0  # deliberately starve the client (self-check)

    def __post_init__(self) -> None:
        if (self.concurrency is None) == (self.rate is None):
            raise ValueError("expected exactly one of --concurrency N (closed loop) or --rate R "
                             "(open loop)")
        if self.concurrency is not None and self.concurrency < 1:
            raise ValueError(f"--concurrency: expected >= 1, got {self.concurrency}")
        if self.rate is not None and not self.rate > 0:
            raise ValueError(f"--rate: expected turns per second > 0, got {self.rate}")
        if self.burstiness <= 0:
            raise ValueError(f"--burstiness: expected > 0, got {self.burstiness}")
        if self.max_concurrency is not None and self.max_concurrency < 1:
            raise ValueError(f"--max-concurrency: expected >= 1, got {self.max_concurrency}")
        if self.duration_s is None and self.requests is None:
            raise ValueError("expected --duration S or --requests N (or both: whichever ends "
                             "first)")
        if self.duration_s is not None and not self.duration_s > 0:
            raise ValueError(f"--duration: expected seconds > 0, got {self.duration_s}")
        if self.requests is not None and self.requests < 1:
            raise ValueError(f"--requests: expected >= 1, got {self.requests}")
        if self.warmup < 0 or self.barge_in_after < 1 or not 0.0 <= self.barge_in <= 1.0:
            raise ValueError(f"expected --warmup >= 0, --barge-in in [0, 1] and --barge-in-after"
                             f" >= 1; got {self.warmup}, {self.barge_in}, {self.barge_in_after}")
        if self.tool_choice not in ("script", "auto"):
            raise ValueError(f"--tool-choice: expected script or auto, got {self.tool_choice!r}")
        if self.tool_mode not in ("grammar", "prompt", "none"):
            raise ValueError(f"--tool-mode: expected grammar, prompt or none, got "
                             f"{self.tool_mode!r}")
        if self.timeout_s <= 0 or self.grace_s < 0 or not 0 <= self.burn_loop_ms < 100:
            raise ValueError("expected --timeout > 0, --grace >= 0, 0 <= --burn-loop-ms < 100")


@dataclass(slots=True)
class RunResult:
    records: list[RequestRecord] = field(default_factory=list)  # measured turns, in end order
    warmup_records: list[RequestRecord] = field(default_factory=list)
    started_unix: float = 0.0
    wall_s: float = 0.0  # first measured dispatch -> last measured turn's end
    loop_lag_ms: list[float] = field(default_factory=list)
    arrival_lag_ms: list[float] = field(default_factory=list)
    cap_wait_ms: list[float] = field(default_factory=list)
    client_cpu_util: float = 0.0
    notes: list[str] = field(default_factory=list)  # why a run stopped early, warmup failures
    unfinished: int = 0  # turns still in flight when the grace period ended (cancelled)
