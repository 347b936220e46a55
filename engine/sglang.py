"""SGLang backend: the Engine protocol over SGLang's in-process async Engine (GPU machines).

The production path on a GPU: SGLang runs the model with its own kernels, CUDA graphs and
DFlash (`speculative_algorithm="DFLASH"`, the drafter folder `turnspec speculator export`
writes); turnspec keeps the front ends, sessions, chat template, tool-call parsing, tracing
and metrics. Requests go in as token ids rendered by our ChatTemplate, so a conversation's
next turn starts with the previous turn's exact ids and SGLang's radix cache serves them; the
tool grammar goes in as the xgrammar structural tag our compiler builds (SGLang compiles it,
once per tag in its own grammar cache, with the same xgrammar: scripts/gpu/sglang_wheels.sh
carries ours; the server compiles nothing itself for this engine: `takes_structural_tag`).
Its `meta_info` (queue,
prefill and finish times, cached tokens, verify steps) becomes our `Timing` and `SpecStats`
(engine/sglang_meta.py);
`abort` is SGLang's `abort_request`; the request's W3C trace context rides in
`external_trace_header` for SGLang's own tracing when that is enabled.

Off the request path, an `SGLangWatch` (engine/sglang_watch.py) reads SGLang's load snapshot
for `stats()` and watches its child processes: when one dies, every stream in flight ends
with `EngineDeadError` at once (it would otherwise wait forever on a scheduler that is gone),
later `generate` calls raise it, and the `on_fatal` listeners (the server) hear the reason.

Run on the lent H200 with SGLang 0.5.17: scripts/gpu/README.md (SGLang section).
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from turnspec.engine.protocol import (
    Delta,
    DeltaStream,
    EngineDeadError,
    EngineError,
    EngineStats,
    GenerateRequest,
    Timing,
)
from turnspec.engine.sglang_meta import final_delta
from turnspec.engine.sglang_plugin.arm import arm
from turnspec.engine.sglang_plugin.config import PluginConfig
from turnspec.engine.sglang_watch import SGLangWatch

if TYPE_CHECKING:
    from turnspec.engine.chat import ChatTemplate

INSTALL_HINT = ("--engine sglang needs the sglang package, on a CUDA machine: see "
                "scripts/gpu/README.md (SGLang) for the wheels that run on the lent H200, or "
                "`pip install 'sglang>=0.5.17'` where a registry is reachable")
log = logging.getLogger("turnspec.engine")


@dataclass(slots=True, frozen=True)
class SGLangConfig:
    """What `turnspec serve --engine sglang` hands SGLang. `extra` are more `sglang.Engine`
    keyword arguments (`--sglang-arg KEY=VALUE`), applied last. `stats_interval_s`: how often
    `stats()`'s figures are read from SGLang's load snapshot (turnspec's, not an SGLang arg)."""

    model_dir: str
    speculator: str = "none"  # "none" | a DFlash drafter folder (z-lab layout, as exported)
    spec_block_size: int | None = None
    mem_fraction: float = 0.85
    attention_backend: str = "triton"  # FA3 is trimmed out of the carried sglang-kernel
    sampling_backend: str = "pytorch"
    dtype: str = "bfloat16"
    extra: tuple[tuple[str, object], ...] = ()
    stats_interval_s: float = 0.1
    # turnspec's speculator inside SGLang's DFLASH worker (engine/sglang_plugin/)
    plugin: PluginConfig = field(default_factory=PluginConfig)

    def __post_init__(self) -> None:
        if not Path(self.model_dir).is_dir():
            raise ValueError(f"model_dir {self.model_dir!r}: expected a local HF model folder")
        if self.speculator != "none" and not (Path(self.speculator) / "config.json").is_file():
            raise ValueError(f"speculator {self.speculator!r}: expected 'none' or a DFlash "
                             "drafter folder (config.json + model.safetensors)")
        if not 0.1 <= self.mem_fraction <= 0.95:
            raise ValueError(f"mem_fraction: expected 0.1..0.95, got {self.mem_fraction}")
        if self.plugin.armed and self.speculator == "none":
            raise ValueError(f"--sglang-spec {self.plugin.mode}: turnspec's speculator rides on "
                             "SGLang's DFLASH; expected --speculator default or PATH")
        if self.spec_block_size is not None and self.spec_block_size < 2:
            raise ValueError(f"spec_block_size: expected >= 2, got {self.spec_block_size}")
        if not 0 < self.stats_interval_s <= 10:
            raise ValueError(f"stats_interval_s: expected 0..10 seconds, got "
                             f"{self.stats_interval_s}")

    def engine_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {
            "model_path": self.model_dir, "dtype": self.dtype,
            "mem_fraction_static": self.mem_fraction,
            "attention_backend": self.attention_backend,
            "sampling_backend": self.sampling_backend, "grammar_backend": "xgrammar",
            "enable_metrics": True,  # meta_info then carries the queue/prefill/finish times
            "incremental_streaming_output": True, "log_level": "error"}
        if self.speculator != "none":
            kw |= {"speculative_algorithm": "DFLASH",
                   "speculative_draft_model_path": self.speculator}
            if self.spec_block_size:
                kw["speculative_num_draft_tokens"] = self.spec_block_size
        return kw | dict(self.extra)


def sglang_available() -> bool:
    return importlib.util.find_spec("sglang") is not None


def sampling_params(request: GenerateRequest) -> dict[str, Any]:
    """Our SamplingParams (and grammar) as SGLang's sampling_params."""
    s = request.sampling
    params: dict[str, Any] = {
        "temperature": s.temperature, "top_p": s.top_p, "top_k": s.top_k or -1,
        "max_new_tokens": s.max_tokens, "stop": list(s.stop), "ignore_eos": s.ignore_eos,
        "stop_token_ids": list(s.stop_token_ids), "skip_special_tokens": True}
    if s.seed is not None:
        params["sampling_seed"] = s.seed
    if request.grammar is not None:
        tag = getattr(request.grammar, "structural_tag", None)
        if not tag:
            raise EngineError("sglang backend: the tool grammar carries no structural tag")
        params["structural_tag"] = tag
    return params


class SGLangEngine:
    """`launch`: what builds the runtime from `cfg.engine_kwargs()`; None is `sglang.Engine`
    (tests pass a stand-in that runs where SGLang cannot)."""

    takes_structural_tag = True  # SGLang compiles the tag itself (and caches it by its text)

    def __init__(self, cfg: SGLangConfig, launch: Callable[..., Any] | None = None) -> None:
        self.cfg = cfg
        self.model_name = Path(cfg.model_dir).name
        self._launch = launch
        self._engine: Any = None
        self._active: set[str] = set()
        self._aborted: set[str] = set()
        self._chat: ChatTemplate | None = None
        self._max_context: int | None = None
        self._watch = SGLangWatch(cfg.stats_interval_s, self._fail)
        self._waiting: dict[str, asyncio.Timeout] = {}  # streams awaiting SGLang's next chunk
        self._fatal: list[Callable[[str], None]] = []
        self.dead: str | None = None  # why the engine can serve no more

    @property
    def chat(self) -> ChatTemplate:
        if self._chat is None:
            from turnspec.engine.chat import ChatTemplate

            self._chat = ChatTemplate.from_model_dir(self.cfg.model_dir)
        return self._chat

    @property
    def max_context(self) -> int:
        if self._max_context is None:
            from turnspec.engine.model.config import ModelConfig

            self._max_context = ModelConfig.from_model_dir(
                self.cfg.model_dir).max_position_embeddings
        return self._max_context

    async def start(self) -> None:
        """Launch SGLang's scheduler processes (a minute or two: weights, CUDA graphs) off the
        loop, so health checks keep answering "starting"; then bind its output loop here and
        start watching it."""
        launch = self._launch
        if launch is None:
            if not sglang_available():
                raise EngineError(INSTALL_HINT)
            import sglang

            launch = sglang.Engine
            arm(self.cfg.plugin)  # SGLang's processes inherit the environment it sets
        self._watch.take_sigquit()
        self._engine = await asyncio.to_thread(launch, **self.cfg.engine_kwargs())
        # SGLang binds its response loop (and, in the main thread, its own SIGTERM and SIGQUIT
        # handlers: ServerApp re-installs its SIGTERM one after start, the watch takes SIGQUIT)
        # to the first loop that asks.
        self._engine.tokenizer_manager.auto_create_handle_loop()
        self._watch.start(self._engine)
        if self.dead is not None:
            raise EngineError(f"sglang failed while starting: {self.dead}")

    async def shutdown(self) -> None:
        await self._watch.stop(dead=self.dead is not None)
        if self._engine is not None:
            if self.dead is not None:  # its processes may be wedged: kill, do not wait on them
                self._watch.kill_children()
            else:
                await asyncio.to_thread(self._engine.shutdown)
            self._engine = None

    def stats(self) -> EngineStats:
        """SGLang's own figures (its load snapshot, read every `cfg.stats_interval_s`); before
        the first read, our own in-flight count alone."""
        s = self._watch.stats
        return s if s is not None else EngineStats(len(self._active), 0, 0, 0, 0)

    def on_fatal(self, listener: Callable[[str], None]) -> None:
        self._fatal.append(listener)

    def _fail(self, reason: str) -> None:
        """SGLang died: end every stream waiting on it now, refuse new ones, tell listeners."""
        if self.dead is not None:
            return
        self.dead = reason
        log.error("sglang: %s; failing the %d request(s) in flight", reason, len(self._active))
        now = asyncio.get_running_loop().time()
        for waiting in self._waiting.values():
            waiting.reschedule(now)  # its await raises TimeoutError: _next turns it into ours
        for listener in self._fatal:
            listener(reason)

    def _dead_error(self) -> EngineDeadError:
        return EngineDeadError(f"the SGLang engine stopped serving: {self.dead}")

    async def abort(self, request_id: str) -> None:
        """Idempotent: one abort_request per request; SGLang frees its KV at the next step."""
        if self._engine is not None and self.dead is None and request_id in self._active \
                and request_id not in self._aborted:
            self._aborted.add(request_id)
            self._engine.tokenizer_manager.abort_request(request_id)

    async def prepare_grammar(self, grammar: Any) -> None:
        """Have SGLang compile the structural tag now, into its grammar cache (keyed by the
        tag's text), with a one-token request on a one-token prompt: the first turn that
        carries the tag then finds it compiled instead of waiting in SGLang's grammar queue.
        The server calls this for tool sets declared ahead of their turns (a warm-up,
        --tools-preload), not for a turn's own, which SGLang compiles as it arrives."""
        if self._engine is None:
            raise EngineError("sglang engine not started")
        params = {"max_new_tokens": 1, "temperature": 0.0,
                  "structural_tag": grammar.structural_tag}
        await self._engine.async_generate(input_ids=[0], sampling_params=params, stream=False)

    def generate(self, request: GenerateRequest) -> DeltaStream:
        if self.dead is not None:
            raise self._dead_error()
        if self._engine is None:
            raise EngineError("sglang engine not started")
        if len(request.prompt_token_ids) >= self.max_context:
            raise EngineError(f"prompt has {len(request.prompt_token_ids)} tokens; this model's "
                              f"context is {self.max_context} tokens")
        if request.request_id in self._active:
            raise EngineError(f"request_id {request.request_id!r} is already in flight")
        params = sampling_params(request)
        self._active.add(request.request_id)
        return DeltaStream(request.request_id, self._stream(request, params), self.abort)

    async def _next(self, chunks: AsyncIterator[dict[str, Any]], rid: str) -> dict[str, Any] | None:
        """SGLang's next chunk (None at its end); `EngineDeadError` once SGLang died, also
        while waiting (`_fail` expires the timeout this await runs under)."""
        if self.dead is not None:
            raise self._dead_error()
        try:
            async with asyncio.timeout(None) as waiting:
                self._waiting[rid] = waiting
                try:
                    return await anext(chunks)
                finally:
                    del self._waiting[rid]
        except StopAsyncIteration:
            return None
        except Exception:
            if self.dead is not None:  # whatever SGLang's cut-off generator raised
                raise self._dead_error() from None
            raise

    async def _stream(self, request: GenerateRequest,
                      params: dict[str, Any]) -> AsyncIterator[Delta]:
        rid = request.request_id
        t0, t_first = time.perf_counter(), None
        timing = Timing(received_unix_ms=time.time() * 1000.0, accepted_at=t0,
                        prompt_tokens=len(request.prompt_token_ids))
        try:
            gen = await self._engine.async_generate(
                input_ids=request.prompt_token_ids, sampling_params=params, stream=True,
                rid=rid, external_trace_header=request.trace)
            while (chunk := await self._next(gen, rid)) is not None:
                meta = chunk.get("meta_info", {})
                ids = list(chunk.get("output_ids") or [])
                if ids and t_first is None:
                    t_first = time.perf_counter()
                delta = Delta(rid, ids, chunk.get("text", ""))
                done = meta.get("finish_reason") is not None
                if done:
                    final_delta(delta, meta, timing, t0, t_first, time.perf_counter())
                yield delta
                if done:
                    return
        finally:  # a consumer that closes early has already aborted (DeltaStream.aclose)
            self._active.discard(rid)
            self._aborted.discard(rid)
