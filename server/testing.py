"""A server on its own event loop in a background thread, for tests, notebooks and benches
that drive it from another loop (or from sync code) over real sockets."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from opentelemetry.sdk.trace import TracerProvider

from turnspec.engine.protocol import Engine
from turnspec.server.app import ServerApp
from turnspec.server.config import ServerConfig

T = TypeVar("T")


class ThreadedServer:
    """`start()` binds the transports and warms the engine; `stop()` shuts down gracefully.

    With `stop_engine=False` the engine outlives the server (one loaded model shared by
    several servers with different configs, e.g. in a test session). `exit`: ServerApp's
    (what an engine failure ends with).
    """

    def __init__(self, engine: Engine, config: ServerConfig, *, stop_engine: bool = True,
                 tracer_provider: TracerProvider | None = None,
                 exit: Callable[[int], None] | None = None) -> None:
        self.app = ServerApp(engine, config, tracer_provider, exit=exit)
        self.stop_engine = stop_engine
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="turnspec-server",
                                        daemon=True)

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = 300.0) -> T:
        """Run `coro` on the server's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def start(self, warm: bool = True) -> ThreadedServer:
        self._thread.start()
        self.call(self.app.start_transports())
        if warm:
            self.call(self.app.start_engine())
        return self

    @property
    def port(self) -> int:
        return self.app.port

    @property
    def grpc_port(self) -> int | None:
        return self.app.grpc_port

    @property
    def hub(self) -> Any:
        return self.app.hub

    def stop(self, drain_seconds: float = 2.0) -> None:
        try:
            self.call(self.app.shutdown(drain_seconds, stop_engine=self.stop_engine))
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
            if not self._thread.is_alive():
                self.loop.close()

