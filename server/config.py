"""Server configuration: parsed once at the edge (the CLI), validated here."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from turnspec.server.grammars import ToolSetShape
from turnspec.server.recorder import RecorderConfig


@dataclass(slots=True, frozen=True)
class ServerConfig:
    """Listening addresses, limits and policies shared by every transport.

    Admission: at most `max_running` turns are handed to the engine at once; up to `max_queue`
    more wait (FIFO) for a slot; beyond that a request is refused at once with a retry hint
    (HTTP 429, gRPC RESOURCE_EXHAUSTED, WS `error`) instead of waiting without bound.
    """

    host: str = "127.0.0.1"
    port: int = 8000  # HTTP + WebSocket; 0 picks a free port
    grpc_port: int | None = 50051  # None disables gRPC; 0 picks a free port
    api_key: str | None = None  # None: no auth
    max_running: int = 64
    max_queue: int = 256
    retry_after_s: float = 1.0
    # Voice-safe defaults (docs/voice-defaults.md has the measurements behind each value):
    default_max_tokens: int = 256  # when the client gives no limit (clamped to the context)
    default_temperature: float = 0.0  # when the request sends no temperature
    default_top_p: float = 1.0  # when the request sends no top_p
    loop_guard: bool = True  # end a looping turn cleanly (engine/loop_guard.py)
    max_message_bytes: int = 4 << 20  # one HTTP body / WS message / gRPC message
    ws_kept_responses: int = 8  # per WS connection, for previous_response_id
    # -- limits (server/limits.py) and connection policy; None: no limit of that kind
    max_tools: int = 64  # tools in one request
    max_input_tokens: int | None = None  # rendered prompt tokens of one turn
    max_output_tokens: int | None = None  # max_tokens one turn may ask for
    max_ws_connections: int = 4096  # open WebSocket connections, all clients together
    grpc_streams_per_connection: int = 256  # concurrent gRPC streams on one connection
    ws_idle_timeout_s: float = 300.0  # a WS with no message and no turn for this long closes
    http_keepalive_s: float = 75.0  # an idle HTTP keep-alive connection closes after this
    send_timeout_s: float = 10.0  # a client that reads nothing for this long loses its turn
    tls_cert: str | None = None  # PEM certificate chain: HTTPS/WSS and gRPC over TLS
    tls_key: str | None = None  # its PEM private key
    drain_seconds: float = 10.0
    spec_block_size: int | None = None  # per-request override sent to the engine (None: engine's)
    record: RecorderConfig | None = None  # finished turns to JSONL (server/recorder.py); None: off
    # tool sets whose grammars are prepared before the server turns ready (server/grammars.py)
    tools_preload: tuple[ToolSetShape, ...] = ()

    def __post_init__(self) -> None:
        for name in ("port",):
            v = getattr(self, name)
            if not isinstance(v, int) or not 0 <= v <= 65535:
                raise ValueError(f"{name}: expected a port in [0, 65535], got {v!r}")
        if self.grpc_port is not None and not 0 <= self.grpc_port <= 65535:
            raise ValueError(f"grpc_port: expected a port in [0, 65535] or None, got "
                             f"{self.grpc_port!r}")
        if self.api_key is not None and not self.api_key.strip():
            raise ValueError("api_key: expected a non-empty key or None")
        if self.max_running < 1:
            raise ValueError(f"max_running: expected >= 1, got {self.max_running}")
        if self.max_queue < 0:
            raise ValueError(f"max_queue: expected >= 0, got {self.max_queue}")
        if self.retry_after_s <= 0:
            raise ValueError(f"retry_after_s: expected > 0, got {self.retry_after_s}")
        if self.default_max_tokens < 1:
            raise ValueError(f"default_max_tokens: expected >= 1, got {self.default_max_tokens}")
        if not 0.0 <= self.default_temperature <= 2.0:
            raise ValueError(f"default_temperature: expected a number in [0, 2], got "
                             f"{self.default_temperature}")
        if not 0.0 < self.default_top_p <= 1.0:
            raise ValueError(f"default_top_p: expected a number in (0, 1], got "
                             f"{self.default_top_p}")
        if self.max_message_bytes < 1024:
            raise ValueError(f"max_message_bytes: expected >= 1024, got {self.max_message_bytes}")
        if self.ws_kept_responses < 1:
            raise ValueError(f"ws_kept_responses: expected >= 1, got {self.ws_kept_responses}")
        check_limits(self)
        if self.drain_seconds < 0:
            raise ValueError(f"drain_seconds: expected >= 0, got {self.drain_seconds}")
        if not all(isinstance(t, ToolSetShape) for t in self.tools_preload):
            raise ValueError("tools_preload: expected ToolSetShape entries (server/grammars.py "
                             "load_tool_sets reads them from a file)")
        if self.spec_block_size is not None and self.spec_block_size < 0:
            raise ValueError(f"spec_block_size: expected >= 0 or None, got "
                             f"{self.spec_block_size}")


def check_limits(cfg: ServerConfig) -> None:
    """Validate the limit and connection-policy fields (ServerConfig.__post_init__)."""
    for name in ("max_tools", "max_ws_connections", "grpc_streams_per_connection"):
        if getattr(cfg, name) < 1:
            raise ValueError(f"{name}: expected >= 1, got {getattr(cfg, name)}")
    for name in ("max_input_tokens", "max_output_tokens"):
        v = getattr(cfg, name)
        if v is not None and v < 1:
            raise ValueError(f"{name}: expected >= 1 or None (no limit), got {v}")
    if cfg.max_output_tokens is not None and cfg.default_max_tokens > cfg.max_output_tokens:
        raise ValueError(f"default_max_tokens={cfg.default_max_tokens}: expected at most "
                         f"max_output_tokens={cfg.max_output_tokens}")
    for name in ("ws_idle_timeout_s", "http_keepalive_s", "send_timeout_s"):
        if getattr(cfg, name) <= 0:
            raise ValueError(f"{name}: expected > 0 seconds, got {getattr(cfg, name)}")
    if (cfg.tls_cert is None) != (cfg.tls_key is None):
        raise ValueError("tls_cert and tls_key: expected both (TLS) or neither (plain), got "
                         f"cert={cfg.tls_cert!r}, key={cfg.tls_key!r}")
    for name in ("tls_cert", "tls_key"):
        path = getattr(cfg, name)
        if path is not None and not Path(path).is_file():
            raise ValueError(f"{name}: expected a PEM file, {path!r} does not exist")
