"""LocalEngine: the embedded PyTorch backend behind the Engine protocol.

The EngineCore step loop runs on its own thread (torch releases the GIL inside kernels);
requests and aborts reach it through a thread-safe inbox, and deltas go back to each
request's asyncio queue with `loop.call_soon_threadsafe` — neither side ever blocks the other.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from turnspec.engine.local.config import LocalEngineConfig
from turnspec.engine.local.core import EngineCore
from turnspec.engine.protocol import (
    Delta,
    DeltaStream,
    EngineError,
    EngineStats,
    GenerateRequest,
    SamplingParams,
)

log = logging.getLogger("turnspec.engine")
# offline generation: a prompt -> its fresh grammar matcher (tools_grammar), or None
GrammarFn = Callable[[list[int]], Any]


class LocalEngine:
    takes_structural_tag = False  # it advances a per-request matcher on its step thread

    def __init__(self, cfg: LocalEngineConfig) -> None:
        self.cfg = cfg
        self.model_name = Path(cfg.model_dir).name
        self.core: EngineCore | None = None
        self._inbox: queue.SimpleQueue[tuple[str, object]] = queue.SimpleQueue()  # add | abort
        self._wake = threading.Event()
        self._streams: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Queue[Delta]]] = {}
        self._aborted: set[str] = set()  # abort sent to the core, final delta not delivered yet
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._chat = None

    # -- lifecycle -------------------------------------------------------------------------
    def load(self) -> None:
        """Load weights (blocking). `start()` calls this in a worker thread."""
        if self.core is None:
            self.core = EngineCore(self.cfg)

    @property
    def max_context(self) -> int:
        return self._core().max_context

    @property
    def chat(self):
        """The model's ChatTemplate (chat template + tool format + grammar compiler)."""
        if self._chat is None:
            from turnspec.engine.chat import ChatTemplate

            self._chat = ChatTemplate.from_model_dir(self.cfg.model_dir, self._core().tokenizer,
                                                     self._core().model.cfg.vocab_size)
        return self._chat

    async def start(self) -> None:
        await asyncio.to_thread(self.load)
        self._start_thread()
        # Warm-up: one short greedy generation exercises prefill, decode (and drafting).
        req = GenerateRequest("warmup", [self._core().tokenizer.eos_token_id or 0] * 8,
                              SamplingParams(max_tokens=4, ignore_eos=True))
        async for _ in self.generate(req):
            pass

    def _start_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="turnspec-engine", daemon=True)
            self._thread.start()

    async def shutdown(self) -> None:
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join, 10.0)
            self._thread = None
        if self.core is not None and self.core.speculation.learner is not None:
            self.core.speculation.learner.close()

    # -- Engine protocol -------------------------------------------------------------------
    async def prepare_grammar(self, grammar: Any) -> None:
        """Nothing to do: the server compiled the matcher it hands us (server/grammars.py)."""

    def generate(self, request: GenerateRequest) -> DeltaStream:
        """Validate now (raising EngineError before any streaming), then stream deltas."""
        if self._stopping:
            raise EngineError("engine is shutting down")
        self._core().validate(request)
        if request.request_id in self._streams:
            raise EngineError(f"request_id {request.request_id!r} is already in flight")
        loop = asyncio.get_running_loop()
        q: asyncio.Queue[Delta] = asyncio.Queue()
        self._streams[request.request_id] = (loop, q)
        # accepted now: the wait for the engine thread's current step is queue time
        self._inbox.put(("add", (request, (time.perf_counter(), time.time() * 1000.0))))
        self._wake.set()
        return DeltaStream(request.request_id, self._deltas(q), self.abort)

    @staticmethod
    async def _deltas(q: asyncio.Queue[Delta]) -> AsyncIterator[Delta]:
        while True:
            delta = await q.get()
            yield delta
            if delta.finished:
                return

    async def abort(self, request_id: str) -> None:
        """Idempotent: one abort reaches the core per request (barge-in, then disconnect)."""
        if request_id in self._streams and request_id not in self._aborted:
            self._aborted.add(request_id)
            self._inbox.put(("abort", request_id))
            self._wake.set()

    def stats(self) -> EngineStats:
        return self._core().stats()

    # -- offline batch API (datagen, benchmarks) ---------------------------------------------
    def generate_batch(self, prompts: list[list[int]], sampling: SamplingParams | None = None,
                       spec_block_size: int | None = None,
                       counts: dict[str, int] | None = None,
                       grammar: GrammarFn | None = None) -> list[list[int]]:
        """Generate completions for many prompts at once (blocking; engine thread not needed).
        Returns completion token ids per prompt, in order, including a final stop token.
        `counts`, if given, gains "prompt_tokens" and "cached_prompt_tokens" (prefix-cache hits
        at admission) over these prompts, so batch work can see how much prefill it shared."""
        out: list[list[int]] = [[] for _ in prompts]
        for i, tokens in self.generate_stream(prompts, sampling, spec_block_size=spec_block_size,
                                              counts=counts, ahead=len(prompts), grammar=grammar):
            out[i] = tokens
        return out

    def generate_stream(self, prompts: Iterable[list[int]], sampling: SamplingParams | None = None,
                        *, spec_block_size: int | None = None, counts: dict[str, int] | None = None,
                        ahead: int | None = None,
                        grammar: GrammarFn | None = None) -> Iterator[tuple[int, list[int]]]:
        """Offline continuous generation: yields (index into `prompts`, completion) as each
        request finishes, in finishing order. Prompts are pulled lazily, keeping at most
        max_batch + `ahead` (default max_batch) requests in the engine, so a long or endless
        iterable keeps every batch slot busy with no tail between chunks; an iterable that stops
        (a time budget) lets the ones in flight finish. Blocking, before start(); closing the
        generator early aborts what is still in flight. `counts` as in generate_batch;
        `grammar(prompt)`, if given, is each prompt's fresh matcher (None: unconstrained)."""
        core = self._core()
        if self._thread is not None:
            raise EngineError("generate_stream drives the core directly; call it before start()")
        sampling = sampling or SamplingParams()
        ahead = core.cfg.max_batch if ahead is None else ahead
        if ahead < 0:
            raise ValueError(f"ahead: expected >= 0, got {ahead}")
        source = enumerate(prompts)
        in_flight: dict[str, tuple[int, list[int]]] = {}
        limit = core.cfg.max_batch + ahead
        exhausted = False
        try:
            while True:
                while not exhausted and len(in_flight) < limit:
                    nxt = next(source, None)
                    if nxt is None:
                        exhausted = True
                        break
                    i, prompt = nxt
                    rid = f"gen-{i}"
                    core.add(GenerateRequest(rid, list(prompt), sampling,
                                             spec_block_size=spec_block_size,
                                             grammar=grammar(prompt) if grammar else None))
                    in_flight[rid] = (i, [])
                    if counts is not None:
                        counts["prompt_tokens"] = counts.get("prompt_tokens", 0) + len(prompt)
                if not core.has_work():
                    return
                for d in core.step():
                    if d.finish_reason == "error":
                        raise EngineError(f"{d.request_id}: {d.error}")
                    in_flight[d.request_id][1].extend(d.token_ids)
                    if d.finished:
                        if counts is not None:
                            counts["cached_prompt_tokens"] = \
                                counts.get("cached_prompt_tokens", 0) + d.timing.cached_tokens
                        yield in_flight.pop(d.request_id)
        finally:
            if in_flight:  # closed early or failed: free the KV of what is left
                for rid in in_flight:
                    core.abort(rid)
                core.step()

    # -- engine thread ---------------------------------------------------------------------
    def _core(self) -> EngineCore:
        if self.core is None:
            self.load()
        assert self.core is not None
        return self.core

    def _drain_inbox(self) -> None:
        core = self._core()
        while True:
            try:
                kind, item = self._inbox.get_nowait()
            except queue.Empty:
                return
            if kind == "add":
                request, accepted = item  # type: ignore[misc]  # generate() validated it
                core.admit(request, accepted)
            else:
                core.abort(item)  # type: ignore[arg-type]

    def _loop(self) -> None:
        core = self._core()
        while not self._stopping:
            self._drain_inbox()
            if not core.has_work():
                self._wake.wait(timeout=1.0)
                self._wake.clear()
                continue
            try:
                deltas = core.step()  # fails only its batch when running the batch raises
            except Exception as e:  # outside any batch (aborts, scheduling): fail what is in flight
                log.exception("engine step failed")
                deltas = core.fail_all(f"engine step failed: {type(e).__name__}: {e}")
            for d in deltas:
                self._emit(d)

    def _emit(self, delta: Delta) -> None:
        """Engine thread -> the request's loop. The registry (`_streams`, `_aborted`) changes
        only on the loop's thread, so generate() and abort() never race a finishing request."""
        target = self._streams.get(delta.request_id)
        if target is not None:
            loop, q = target
            loop.call_soon_threadsafe(self._deliver, q, delta)

    def _deliver(self, q: asyncio.Queue[Delta], delta: Delta) -> None:
        if delta.finished:
            self._streams.pop(delta.request_id, None)
            self._aborted.discard(delta.request_id)
        q.put_nowait(delta)
