"""The Engine protocol: what every backend (local PyTorch, SGLang) offers the server.

A request is already tokenized (the server renders chat templates through the engine's
`chat`, a `turnspec.engine.chat.ChatTemplate`); the engine streams `Delta`s back in a
`DeltaStream`, the last one carrying `finished=True`, the finish reason, usage, timing and
speculation stats. Closing the stream before that final delta aborts the request; `abort` is
idempotent, so a barge-in followed by a disconnect still stops the request once.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from turnspec.engine.loop_guard import LoopGuard

if TYPE_CHECKING:
    from turnspec.engine.chat import ChatTemplate

FINISH_REASONS = ("stop", "length", "abort", "error")


class EngineError(Exception):
    """A request the engine cannot serve; the message says what was wrong and what was expected."""


class ContextLengthError(EngineError):
    """The prompt (plus max_tokens) does not fit the model context."""


class EngineDeadError(EngineError):
    """The engine can serve nothing more (a process it runs in died): every request in flight
    ends with it, and so does every later `generate`. Not the request's fault: retry elsewhere."""


@dataclass(slots=True, frozen=True)
class SamplingParams:
    """Per-request sampling. temperature == 0 means greedy (top_p/top_k ignored).
    `loop_guard`: end the request (finish "stop", `Delta.stop_reason` "loop_guard") once its
    output repeats itself (engine/loop_guard.py); None: off."""

    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0  # 0 = no top-k
    seed: int | None = None
    max_tokens: int = 256
    stop: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    ignore_eos: bool = False
    loop_guard: LoopGuard | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.temperature, (int, float)) and math.isfinite(self.temperature)):
            raise ValueError(f"temperature: expected a finite number >= 0, got {self.temperature!r}")
        if self.temperature < 0:
            raise ValueError(f"temperature: expected >= 0, got {self.temperature}")
        if not (0.0 < self.top_p <= 1.0):
            raise ValueError(f"top_p: expected a number in (0, 1], got {self.top_p}")
        if not isinstance(self.top_k, int) or self.top_k < 0:
            raise ValueError(f"top_k: expected an integer >= 0 (0 disables), got {self.top_k!r}")
        if not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise ValueError(f"max_tokens: expected an integer >= 1, got {self.max_tokens!r}")
        if self.seed is not None and not isinstance(self.seed, int):
            raise ValueError(f"seed: expected an integer or None, got {self.seed!r}")
        for s in self.stop:
            if not isinstance(s, str) or not s:
                raise ValueError(f"stop: expected non-empty strings, got {s!r}")
        if self.loop_guard is not None and not isinstance(self.loop_guard, LoopGuard):
            raise ValueError(f"loop_guard: expected a LoopGuard or None, got "
                             f"{type(self.loop_guard).__name__}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


@dataclass(slots=True)
class GenerateRequest:
    """One generation. `prompt_token_ids` is the fully templated prompt.

    `grammar` is a per-request matcher from `turnspec.tools_grammar.grammar` (or None);
    the engine masks target logits with it at every position it samples or verifies. An
    engine with `takes_structural_tag` gets a `StructuralTagGrammar` instead.
    `spec_block_size` overrides the drafter's block size (0 disables speculation).
    """

    request_id: str
    prompt_token_ids: list[int]
    sampling: SamplingParams = field(default_factory=SamplingParams)
    grammar: Any | None = None
    spec_block_size: int | None = None
    session_id: str | None = None
    trace: dict[str, str] | None = None  # W3C traceparent/tracestate, if any
    trace_steps: bool = False  # record each verify step's time (SpecStats.step_times)

    def __post_init__(self) -> None:
        if not self.request_id:
            raise ValueError("request_id: expected a non-empty string")
        if not self.prompt_token_ids:
            raise ValueError("prompt_token_ids: expected at least one token")
        if self.spec_block_size is not None and self.spec_block_size < 0:
            raise ValueError(f"spec_block_size: expected >= 0, got {self.spec_block_size}")


@dataclass(slots=True)
class Timing:
    """Server-side timing of one request, in milliseconds (wall clock, engine thread)."""

    received_unix_ms: float = 0.0  # when the engine accepted the request (time.time() * 1000)
    accepted_at: float = 0.0  # the same moment on time.perf_counter() (process-local: spans)
    queue_ms: float = 0.0  # accepted -> first scheduled
    prefill_ms: float = 0.0  # first scheduled -> first token sampled
    decode_ms: float = 0.0  # first token -> finished
    first_token_ms: float = 0.0  # accepted -> first token available (engine-side TTFT)
    engine_host_ms: float = 0.0  # engine step time not spent in model forward passes
    # SGLang only (None elsewhere): the request's way in, from the engine's call to SGLang's
    # scheduler queue, and the first token's way back, from SGLang's prefill mark to the engine
    engine_in_ms: float | None = None
    first_back_ms: float | None = None
    prompt_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens served from the prefix cache (not prefilled)
    prefill_tokens: int = 0  # prompt tokens actually run through the model
    completion_tokens: int = 0

    def as_dict(self) -> dict[str, float | int]:
        """The timing as reported (`accepted_at` is process-local and stays out)."""
        return {k: getattr(self, k) for k in self.__slots__  # type: ignore[attr-defined]
                if k != "accepted_at"}


@dataclass(slots=True)
class SpecStats:
    """Speculation stats: tau = committed tokens per verify step, bonus included.

    `step_lengths[i]` is what verify step i committed (the accepted-length histogram);
    `step_times[i]` its time.perf_counter(), kept only for requests with `trace_steps`."""

    verify_steps: int = 0
    accepted_tokens: int = 0  # drafts accepted and emitted (bonus tokens not counted)
    committed_tokens: int = 0  # tokens emitted by verify steps (accepted + bonus)
    block_size: int = 0
    step_lengths: list[int] = field(default_factory=list)
    step_times: list[float] | None = None

    def add_step(self, committed: int, at: float | None = None) -> None:
        """One verify step that committed `committed` tokens (its accepted drafts + bonus)."""
        self.verify_steps += 1
        self.accepted_tokens += committed - 1
        self.committed_tokens += committed
        self.step_lengths.append(committed)
        if at is not None:
            if self.step_times is None:
                self.step_times = []
            self.step_times.append(at)

    @property
    def tau(self) -> float:
        return self.committed_tokens / self.verify_steps if self.verify_steps else 0.0

    def drop_tail(self, n: int) -> None:
        """Uncount the last `n` tokens of a verify step that the request never emitted (they fell
        past its stop token or max_tokens). What it kept were accepted drafts, its bonus was
        dropped, so tau stays tokens *emitted* per verify step, as the offline replay counts."""
        if not 0 < n <= self.committed_tokens:
            raise ValueError(f"drop_tail({n}): expected 1..{self.committed_tokens} committed tokens")
        self.committed_tokens -= n
        self.accepted_tokens -= n - 1
        if self.step_lengths:
            self.step_lengths[-1] -= n

    def as_dict(self) -> dict[str, float | int]:
        return {
            "verify_steps": self.verify_steps,
            "accepted_tokens": self.accepted_tokens,
            "committed_tokens": self.committed_tokens,
            "block_size": self.block_size,
            "tau": round(self.tau, 4),
        }


@dataclass(slots=True)
class Delta:
    """A streamed piece of output. Exactly one Delta per request has `finished=True`."""

    request_id: str
    token_ids: list[int]
    text: str
    finished: bool = False
    finish_reason: str | None = None  # one of FINISH_REASONS when finished
    error: str | None = None  # set when finish_reason == "error"
    # why a "stop" was not the model's own stop token or a stop string: "loop_guard"
    # (engine/loop_guard.py); None otherwise
    stop_reason: str | None = None
    timing: Timing | None = None  # on the final delta
    spec: SpecStats | None = None  # on the final delta, when speculation ran


@dataclass(slots=True, frozen=True)
class EngineStats:
    """A snapshot for health checks, tests and /metrics.

    A KV block is the engine's unit of KV allocation: `block_size` tokens in the local engine;
    one token slot of SGLang's pool on the SGLang path (SGLang counts its pool in tokens,
    whatever its page size; engine/sglang_load.py has the mapping)."""

    active_sequences: int
    waiting_sequences: int
    free_kv_blocks: int
    total_kv_blocks: int
    cached_kv_blocks: int  # free blocks still holding reusable prefix KV


class DeltaStream:
    """The deltas of one request, as `Engine.generate` returns them.

    Iterate it to the final delta (`finished=True`); `aclose()` before that aborts the request
    through its engine's `abort` (also when the stream was never iterated), so a consumer that
    goes away frees the request's KV without sending an abort of its own.
    """

    __slots__ = ("request_id", "_deltas", "_abort", "finished", "_closed")

    def __init__(self, request_id: str, deltas: AsyncIterator[Delta],
                 abort: Callable[[str], Awaitable[None]]) -> None:
        self.request_id = request_id
        self._deltas = deltas
        self._abort = abort
        self.finished = False
        self._closed = False

    def __aiter__(self) -> DeltaStream:
        return self

    async def __anext__(self) -> Delta:
        if self.finished or self._closed:
            raise StopAsyncIteration
        delta = await self._deltas.__anext__()
        if delta.finished:  # let the producer's cleanup run now, not when it is collected
            self.finished = True
            await self._close_deltas()
        return delta

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if not self.finished:
            await self._abort(self.request_id)
        await self._close_deltas()

    async def _close_deltas(self) -> None:
        aclose = getattr(self._deltas, "aclose", None)
        if aclose is not None:
            await aclose()


@runtime_checkable
class Engine(Protocol):
    """What the server needs from a backend."""

    model_name: str
    max_context: int
    # What it reads of `GenerateRequest.grammar`: False, a per-request ToolGrammarMatcher it
    # advances itself (the embedded engine); True, only its `structural_tag`, which the
    # backend compiles (SGLang), so the server builds the tag and compiles nothing.
    takes_structural_tag: bool

    @property
    def chat(self) -> ChatTemplate:
        """The model's chat template, tool-call format and grammar compiler (available once
        `start()` has returned)."""
        ...

    def generate(self, request: GenerateRequest) -> DeltaStream:
        """Stream deltas for `request`; raises EngineError for bad requests before streaming."""
        ...

    async def abort(self, request_id: str) -> None:
        """Stop `request_id` (no-op if unknown, finished or already aborted); its KV is freed
        within one step."""
        ...

    def stats(self) -> EngineStats: ...

    async def prepare_grammar(self, grammar: Any) -> None:
        """Get a grammar ready ahead of the first request that carries it, where the backend
        compiles it itself (`takes_structural_tag`; SGLang: into its grammar cache); a no-op
        where the server hands the engine a compiled matcher."""
        ...

    async def start(self) -> None:
        """Load weights, warm up; health turns SERVING after this returns."""
        ...

    async def shutdown(self) -> None: ...


@runtime_checkable
class WatchedEngine(Protocol):
    """An engine that can die under the server (it runs in other processes) and says so: each
    listener is called once, on the loop, with the reason, when it can serve no more. Its
    in-flight streams end with `EngineDeadError` then, and so does every later `generate`."""

    def on_fatal(self, listener: Callable[[str], None]) -> None: ...
