"""What all sessions share: the engine, the chat template, admission, auth, readiness,
the registry of in-flight turns (for gRPC Abort and drain) and the metrics.

An engine that can die under the server (`WatchedEngine`: SGLang's processes) reports it
here: from then on health says "failed" (503, gRPC NOT_SERVING), new turns get a retryable
503 `engine_unavailable`, and the `on_engine_failure` listeners (ServerApp) run."""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.trace import TracerProvider

from turnspec.engine.protocol import Engine, WatchedEngine
from turnspec.server.admission import Admission
from turnspec.server.config import ServerConfig
from turnspec.server.errors import ApiError, engine_unavailable, unauthorized, unavailable
from turnspec.server.grammars import ToolGrammars
from turnspec.server.metrics import Metrics, ServerState
from turnspec.server.recorder import ConversationRecorder
from turnspec.server.tracing import TurnTracer

if TYPE_CHECKING:
    from turnspec.engine.chat import ChatTemplate
    from turnspec.server.turn import Turn

log = logging.getLogger("turnspec.server")


class SessionHub:
    def __init__(self, engine: Engine, config: ServerConfig,
                 tracer_provider: TracerProvider | None = None) -> None:
        self.engine = engine
        self.tracer_provider = tracer_provider
        self.tracer = TurnTracer(tracer_provider) if tracer_provider is not None else None
        self.config = config
        self.metrics = Metrics(self._state, engine.stats, engine.model_name)
        self.admission = Admission(config.max_running, config.max_queue, config.retry_after_s)
        self.recorder = (ConversationRecorder(config.record, secrets=(config.api_key,))
                         if config.record is not None else None)
        self.grammars: ToolGrammars | None = None  # from start_engine (it needs the tokenizer)
        self.ready = False
        self.draining = False
        self.failed: str | None = None  # why the engine can serve no more (it died)
        self._turns: dict[str, Turn] = {}
        self._reserved: set[str] = set()
        self._on_close: dict[str, Callable[[Turn], Any]] = {}
        self.ws_connections = 0  # open WebSocket connections (max_ws_connections)
        self._idle = asyncio.Event()
        self._idle.set()
        self._listeners: list[Callable[[bool], Awaitable[None]]] = []
        self._failure_listeners: list[Callable[[str], Awaitable[None]]] = []
        self._failover: asyncio.Task[None] | None = None

    @property
    def chat(self) -> ChatTemplate:
        """The engine's ChatTemplate; needs the engine started (the tokenizer comes with the
        weights)."""
        return self.engine.chat

    # -- readiness ---------------------------------------------------------------------------

    def on_serving_change(self, listener: Callable[[bool], Awaitable[None]]) -> None:
        """`listener(serving)` runs when the server turns ready, and when it starts draining."""
        self._listeners.append(listener)

    def on_engine_failure(self, listener: Callable[[str], Awaitable[None]]) -> None:
        """`listener(reason)` runs once the engine died, after health turned NOT_SERVING."""
        self._failure_listeners.append(listener)

    @property
    def serving(self) -> bool:
        return self.ready and not self.draining and self.failed is None

    async def start_engine(self) -> None:
        """Load and warm the engine; health turns SERVING afterwards."""
        if isinstance(self.engine, WatchedEngine):
            self.engine.on_fatal(self._engine_failed)
        await self.engine.start()
        # Build the template and the grammar compiler now (~0.3 s) rather than in the
        # first request with tools.
        await asyncio.to_thread(self._warm_frontend)
        self.grammars = ToolGrammars(self.chat,
                                     structural_tag_only=self.engine.takes_structural_tag,
                                     prepare_backend=self.engine.prepare_grammar)
        if self.config.tools_preload:
            t0 = time.perf_counter()
            n = await self.grammars.preload(self.config.tools_preload)
            log.info("tools preload: %d tool-set shapes prepared in %.0f ms", n,
                     (time.perf_counter() - t0) * 1000.0)
        self.ready = True
        for cb in self._listeners:
            await cb(True)

    def _warm_frontend(self) -> None:
        """Compile the chat template (first render ~20 ms), build the grammar compiler and,
        where this process masks logits itself, the budget steering of required calls (~50 ms
        on SmolLM2's vocabulary, once)."""
        chat = self.chat
        chat.render([{"role": "user", "content": "hi"}])
        compiler = chat.grammar_compiler
        if not self.engine.takes_structural_tag:
            compiler.closer()

    def _engine_failed(self, reason: str) -> None:
        """The engine died (its streams in flight are ending with EngineDeadError now)."""
        if self.failed is not None:
            return
        self.failed = reason
        log.error("engine failed: %s (%d turn(s) in flight get an error)", reason,
                  len(self._turns))
        self._failover = asyncio.get_running_loop().create_task(self._fail_over(reason))

    async def _fail_over(self, reason: str) -> None:
        for cb in self._listeners:  # gRPC health NOT_SERVING (HTTP /health reads `failed`)
            await cb(False)
        for listener in self._failure_listeners:
            await listener(reason)

    async def wait_idle(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self._idle.wait(), timeout=timeout)
            return True
        except TimeoutError:
            return False

    async def drain(self, seconds: float) -> int:
        """Refuse new turns, let in-flight ones finish for up to `seconds`, abort the rest.
        Returns how many turns had to be aborted."""
        if not self.draining:
            self.draining = True
            for cb in self._listeners:
                await cb(False)
        if await self.wait_idle(seconds):
            return 0
        else:
            left = list(self._turns.values())
            for turn in left:
                await turn.cancel()
            log.warning("drain: %d turn(s) still running after %.1f s were aborted",
                        len(left), seconds)
            return len(left)

    # -- per-request checks ------------------------------------------------------------------

    def check_auth(self, authorization: str | None) -> None:
        """`authorization` is the raw header/metadata value (`Bearer <key>`)."""
        key = self.config.api_key
        if key is None:
            return
        if not authorization:
            raise unauthorized("missing API key: send the header 'Authorization: Bearer <key>'")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(),
                                                                  key.encode()):
            raise unauthorized("incorrect API key provided")

    def check_accepting(self) -> None:
        if self.failed is not None:
            raise engine_unavailable(f"the engine failed: {self.failed}")
        if self.draining:
            raise unavailable("server is shutting down; retry on another replica",
                              code="server_shutting_down")
        if not self.ready:
            raise unavailable("server is warming up; retry shortly", code="not_ready")

    # -- registry ----------------------------------------------------------------------------

    def reserve(self, request_id: str) -> None:
        if request_id in self._turns or request_id in self._reserved:
            raise ApiError(409, "invalid_request_error",
                           f"request_id {request_id!r} is already in flight; use a unique id",
                           code="duplicate_request_id", param="request_id")
        self._reserved.add(request_id)
        self._idle.clear()

    def unreserve(self, request_id: str) -> None:
        self._reserved.discard(request_id)
        self._maybe_idle()

    def turn_started(self, turn: Turn, on_close: Callable[[Turn], Any]) -> None:
        self._reserved.discard(turn.request_id)
        self._turns[turn.request_id] = turn
        self._on_close[turn.request_id] = on_close

    def turn_closed(self, turn: Turn) -> None:
        if self._turns.pop(turn.request_id, None) is None:
            return
        self.admission.release()
        cb = self._on_close.pop(turn.request_id, None)
        if cb is not None:
            cb(turn)
        self._maybe_idle()

    def _maybe_idle(self) -> None:
        if not self._turns and not self._reserved:
            self._idle.set()

    @property
    def in_flight(self) -> int:
        return len(self._turns)

    async def abort(self, request_id: str) -> bool:
        turn = self._turns.get(request_id)
        if turn is None:
            return False
        await turn.cancel()
        return True

    def rejected(self, transport: str, err: ApiError, received: float | None = None) -> None:
        """Count and log a request refused before streaming (one info line per request);
        `received` (perf_counter) times the refusal."""
        self.metrics.rejected(transport, err.code or err.type)
        if received is not None:
            self.metrics.refusal.labels(transport, err.code or err.type).observe(
                time.perf_counter() - received)
        log.info("%s rejected %d %s: %s", transport, err.status, err.code or err.type,
                 err.message)

    def _state(self) -> ServerState:
        return ServerState(ready=self.ready, draining=self.draining,
                           running=self.admission.running, queued=self.admission.queued,
                           ws_connections=self.ws_connections,
                           engine_failed=self.failed is not None)
