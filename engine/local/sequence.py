"""Per-request state inside the local engine."""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field

import torch

from turnspec.engine.local.detokenize import IncrementalDetokenizer
from turnspec.engine.loop_guard import LoopDetector
from turnspec.engine.protocol import GenerateRequest, SpecStats, Timing


class Status(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"


@dataclass(slots=True)
class Sequence:
    """Invariants while RUNNING: `num_computed` tokens of `token_ids` have target KV (and,
    with a drafter, drafter context rows) in the blocks of `block_table`; the last token is
    the pending input of the next step, so num_computed == len(token_ids) - 1 between steps.
    `hashed_blocks` leading blocks are registered in the prefix cache.
    """

    request: GenerateRequest
    detok: IncrementalDetokenizer
    stop_ids: frozenset[int]
    token_ids: list[int] = field(default_factory=list)
    prompt_len: int = 0
    num_computed: int = 0
    block_table: list[int] = field(default_factory=list)
    block_hashes: list[int] = field(default_factory=list)
    status: Status = Status.WAITING
    generator: torch.Generator | None = None
    spec_block: int = 0  # speculative block size for this request (0/1 = plain decode)
    spec_ema: float | None = None  # tokens per spec step, EMA (spec_policy.py)
    spec_pause: int = 0            # plain steps left before the next speculative probe
    spec_backoff: int = 0          # length of the last pause (doubles while unprofitable)
    finish_reason: str | None = None
    stop_reason: str | None = None  # Delta.stop_reason: why a "stop" was not the model's own
    loop: LoopDetector | None = None  # the request's loop guard, when it asked for one
    timing: Timing = field(default_factory=Timing)
    spec: SpecStats = field(default_factory=SpecStats)
    t_received: float = 0.0
    t_scheduled: float = 0.0
    t_first_token: float = 0.0

    @classmethod
    def create(cls, request: GenerateRequest, detok: IncrementalDetokenizer,
               stop_ids: frozenset[int], spec_block: int,
               accepted: tuple[float, float] | None = None) -> Sequence:
        """`accepted`: (time.perf_counter(), unix ms) when the engine took the request, if
        before now (LocalEngine.generate, while the engine thread finished its step)."""
        seq = cls(request=request, detok=detok, stop_ids=stop_ids,
                  token_ids=list(request.prompt_token_ids),
                  prompt_len=len(request.prompt_token_ids), spec_block=spec_block)
        perf, unix_ms = accepted or (time.perf_counter(), time.time() * 1000.0)
        seq.t_received = seq.timing.accepted_at = perf
        seq.timing.received_unix_ms = unix_ms
        seq.timing.prompt_tokens = seq.prompt_len
        s = request.sampling
        if s.loop_guard is not None:
            seq.loop = LoopDetector(s.loop_guard)
        if not s.greedy:
            seq.generator = torch.Generator()
            if s.seed is not None:
                seq.generator.manual_seed(s.seed)
            else:
                seq.generator.seed()
        seq.spec.block_size = spec_block
        return seq

    @property
    def request_id(self) -> str:
        return self.request.request_id

    @property
    def num_output(self) -> int:
        return len(self.token_ids) - self.prompt_len

    @property
    def output_ids(self) -> list[int]:
        return self.token_ids[self.prompt_len:]

    @property
    def remaining(self) -> int:
        return self.request.sampling.max_tokens - self.num_output
