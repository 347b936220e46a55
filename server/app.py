"""One server process: HTTP + WebSocket (aiohttp) on `port`, gRPC on `grpc_port`, one engine.

Start order: transports first (health answers 503 / NOT_SERVING), then the engine's load and
warm-up, then SERVING. Shutdown (SIGTERM/SIGINT): health turns unhealthy, new turns are
refused (503 / UNAVAILABLE / WS error), in-flight streams get `drain_seconds` to finish and
are then aborted, the listeners close, the engine shuts down.

Engine death (SGLang's scheduler or detokenizer process dies): the engine ends every turn in
flight with an error, health turns 503 / NOT_SERVING and new turns get a retryable 503 at
once (server/hub.py); once those errors are out (the turns closed, at most
`FAILURE_GRACE_S`), `exit(EXIT_ENGINE_FAILED)`: by default the shutdown above, then the process
exits with that code for its supervisor to restart it (docs/reliability.md says why this
rather than a restart in process).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable

from aiohttp import web
from opentelemetry.sdk.trace import TracerProvider

from turnspec.engine.protocol import Engine
from turnspec.server.config import ServerConfig
from turnspec.server.hub import SessionHub
from turnspec.server.tls import http_ssl_context
from turnspec.server.transports.grpc_generation import GrpcServer
from turnspec.server.transports.http import build_http_app, forget_stopped_apps
from turnspec.server.transports.receipt import kernel_stamps_available, stamping_listeners

log = logging.getLogger("turnspec.server")
_SIGNALS = (signal.SIGTERM, signal.SIGINT)
EXIT_ENGINE_FAILED = 69  # sysexits' EX_UNAVAILABLE: the engine died; restart this process
FAILURE_GRACE_S = 5.0  # at most this long for the failed turns' errors to go out
FAILURE_DRAIN_S = 1.0  # the shutdown's drain after an engine failure (its turns ended)


class ServerApp:
    """`exit(code)` is what an engine failure ends with; None: stop serving and leave
    `exit_code` for the process to exit with (tests pass a callable that records it)."""

    def __init__(self, engine: Engine, config: ServerConfig,
                 tracer_provider: TracerProvider | None = None,
                 exit: Callable[[int], None] | None = None) -> None:
        self.config = config
        self.hub = SessionHub(engine, config, tracer_provider)
        self.exit_code = 0
        self._exit = exit if exit is not None else self._stop_with
        self.hub.on_engine_failure(self._engine_failed)
        self._runner: web.AppRunner | None = None
        self._grpc: GrpcServer | None = None
        self.port = 0
        self.grpc_port: int | None = None
        self._stop = asyncio.Event()
        self._stopped = False
        self._signals = False  # our SIGTERM/SIGINT handlers are installed

    async def start_transports(self) -> None:
        """Bind and serve; until `start_engine()` completes health says not ready."""
        cfg = self.config
        app = build_http_app(self.hub)
        # handler_cancellation: a client that disconnects cancels its handler -> engine abort.
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None,
                                     shutdown_timeout=1.0,
                                     keepalive_timeout=cfg.http_keepalive_s)
        await self._runner.setup()
        ssl_context = http_ssl_context(cfg.tls_cert, cfg.tls_key) if cfg.tls_cert else None
        # our own listeners, so each connection keeps the kernel's receive stamps (receipt.py)
        listeners = stamping_listeners(cfg.host, cfg.port)
        for sock in listeners:
            await web.SockSite(self._runner, sock, ssl_context=ssl_context).start()
        self.port = listeners[0].getsockname()[1]
        if not kernel_stamps_available():
            log.warning("this platform gives no kernel receive timestamps: HTTP and WebSocket "
                        "requests are dated when their handler runs, so time they wait for "
                        "the event loop shows in a load test's residual, not in receive_ms")
        if cfg.grpc_port is not None:
            self._grpc = GrpcServer(self.hub)
            self.grpc_port = await self._grpc.start(cfg.host, cfg.grpc_port)

    async def start_engine(self) -> None:
        await self.hub.start_engine()
        if self._signals:  # an engine may bind its own (SGLang's SIGTERM handler): ours drain
            self._install_signals()

    async def start(self) -> None:
        await self.start_transports()
        await self.start_engine()

    def listening(self) -> str:
        h, tls = self.config.host, self.config.tls_cert is not None
        lines = [f"turnspec: model {self.hub.engine.model_name}",
                 f"  HTTP      http{'s' * tls}://{h}:{self.port}/v1  (chat/completions, "
                 "models, /health, /metrics)",
                 f"  WebSocket ws{'s' * tls}://{h}:{self.port}/v1/responses"]
        if self.grpc_port is not None:
            lines.append(f"  gRPC      {h}:{self.grpc_port}{' (TLS)' * tls}  "
                         "(turnspec.v1.Generation, health, reflection)")
        return "\n".join(lines)

    def request_stop(self) -> None:
        self._stop.set()

    def _stop_with(self, code: int) -> None:
        self.exit_code = code
        self._stop.set()

    async def _engine_failed(self, reason: str) -> None:
        """After the engine died: let the failed turns' errors go out, then exit non-zero."""
        delivered = await self.hub.wait_idle(FAILURE_GRACE_S)
        log.error("the engine failed (%s); %s; exiting with status %d for the supervisor to "
                  "restart this server", reason, "every turn in flight got its error"
                  if delivered else f"{self.hub.in_flight} turn(s) still open after "
                  f"{FAILURE_GRACE_S:g} s", EXIT_ENGINE_FAILED)
        self._exit(EXIT_ENGINE_FAILED)

    def _install_signals(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in _SIGNALS:
            loop.add_signal_handler(sig, self._stop.set)
        self._signals = True

    async def serve_until_signal(self) -> None:
        """Run until SIGTERM/SIGINT (or `request_stop()`), then shut down gracefully."""
        self._install_signals()
        try:
            await self._stop.wait()
        finally:
            loop = asyncio.get_running_loop()
            for sig in _SIGNALS:
                loop.remove_signal_handler(sig)
            self._signals = False
        await self.shutdown(FAILURE_DRAIN_S if self.exit_code else None)

    async def shutdown(self, drain_seconds: float | None = None, stop_engine: bool = True) -> None:
        if self._stopped:
            return
        self._stopped = True
        seconds = self.config.drain_seconds if drain_seconds is None else drain_seconds
        log.info("shutting down: draining for up to %.1f s (%d turn(s) in flight)", seconds,
                 self.hub.in_flight)
        aborted = await self.hub.drain(seconds)
        if aborted:  # give the aborted streams a moment to send their terminal events
            await self.hub.wait_idle(2.0)
        if self._grpc is not None:
            await self._grpc.stop(grace=0.5)
        if self._runner is not None:
            await self._runner.cleanup()
            forget_stopped_apps()
        if self.hub.grammars is not None:
            self.hub.grammars.close()
        if self.hub.ready and stop_engine:
            await self.hub.engine.shutdown()
        if self.hub.recorder is not None:  # write what is queued (off the loop: it joins)
            await asyncio.to_thread(self.hub.recorder.close)
        if self.hub.tracer_provider is not None:  # export what is still batched
            await asyncio.to_thread(self.hub.tracer_provider.shutdown)
        log.info("stopped")
