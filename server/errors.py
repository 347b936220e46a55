"""One error type for every transport, in OpenAI's shape.

The session layer raises `ApiError`; each transport renders it: HTTP as
`{"error": {...}}` with `status`, WebSocket as `{"type": "error", "status": .., "error": {...}}`,
gRPC as a status code (`grpc_code`) with the message as details.
"""

from __future__ import annotations

from typing import Any

# HTTP status -> gRPC status code name (grpc.StatusCode member).
_GRPC_CODES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    404: "NOT_FOUND",
    409: "ALREADY_EXISTS",
    413: "RESOURCE_EXHAUSTED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


class ApiError(Exception):
    """A request failed; `message` says what was wrong and what was expected."""

    __slots__ = ("status", "type", "code", "message", "param", "retry_after_s")

    def __init__(self, status: int, type: str, message: str, *, code: str | None = None,
                 param: str | None = None, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.type = type
        self.code = code
        self.message = message
        self.param = param
        self.retry_after_s = retry_after_s

    def body(self) -> dict[str, Any]:
        """The inner OpenAI error object."""
        return {"type": self.type, "code": self.code, "message": self.message,
                "param": self.param}

    @property
    def grpc_code(self) -> str:
        return _GRPC_CODES.get(self.status, "UNKNOWN")

    def __repr__(self) -> str:
        return f"ApiError({self.status}, {self.code or self.type}: {self.message})"


def invalid(message: str, param: str | None = None, code: str | None = None) -> ApiError:
    """400: the request is malformed or a field has the wrong type/value."""
    return ApiError(400, "invalid_request_error", message, code=code, param=param)


def unauthorized(message: str) -> ApiError:
    return ApiError(401, "invalid_request_error", message, code="invalid_api_key")


def overloaded(running: int, queued: int, retry_after_s: float) -> ApiError:
    """429 with a retry hint: admission queue is full (no unbounded waiting)."""
    return ApiError(
        429, "rate_limit_error",
        f"server at capacity ({running} requests running, {queued} queued, queue full); "
        f"retry after {retry_after_s:g} s",
        code="server_busy", retry_after_s=retry_after_s)


def unavailable(message: str, code: str) -> ApiError:
    return ApiError(503, "server_error", message, code=code, retry_after_s=1.0)


def engine_unavailable(reason: str) -> ApiError:
    """503, retryable: the engine died under the server (`EngineDeadError`), which exits for
    its supervisor to restart it (docs/reliability.md, "The engine dies")."""
    return unavailable(f"{reason}; this server is exiting for its supervisor to restart it: "
                       "retry on another replica, or here once /health answers 200",
                       code="engine_unavailable")


def internal(message: str) -> ApiError:
    return ApiError(500, "server_error", message, code="engine_error")


def unexpected(e: BaseException) -> ApiError:
    """500 for a bug met while handling a request: the client gets a structured error (the
    traceback goes to the log, not to the client)."""
    return ApiError(500, "server_error", f"internal error while handling the request "
                    f"({type(e).__name__}); it was logged", code="internal_error")
