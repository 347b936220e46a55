"""Per-request limits beyond the message size: tools per request, input tokens, output
tokens. Each refusal is a 400 in OpenAI's shape whose `code` names the limit, and whose
message says what was sent and what is allowed (`ServerConfig` holds the numbers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnspec.server.errors import ApiError, invalid

if TYPE_CHECKING:
    from turnspec.server.config import ServerConfig
    from turnspec.server.session import TurnRequest


def check_request(cfg: ServerConfig, req: TurnRequest) -> None:
    """Limits visible before the prompt is rendered (tools, requested output tokens)."""
    if req.tools is not None and len(req.tools) > cfg.max_tools:
        raise invalid(f"tools: {len(req.tools)} tools sent; this server accepts at most "
                      f"{cfg.max_tools} per request", param="tools", code="too_many_tools")
    if (cfg.max_output_tokens is not None and req.max_tokens is not None
            and req.max_tokens > cfg.max_output_tokens):
        raise invalid(f"max_tokens: {req.max_tokens} output tokens asked for; this server "
                      f"allows at most {cfg.max_output_tokens} per turn", param="max_tokens",
                      code="max_tokens_too_large")


def check_prompt(cfg: ServerConfig, prompt_tokens: int, param: str) -> None:
    """The rendered prompt (system, history, tools and the new input) against the limit."""
    if cfg.max_input_tokens is not None and prompt_tokens > cfg.max_input_tokens:
        raise invalid(f"{param}: the rendered prompt is {prompt_tokens} tokens; this server "
                      f"accepts at most {cfg.max_input_tokens} input tokens per turn",
                      param=param, code="input_too_long")


def too_many_connections(limit: int) -> ApiError:
    """503: the server holds its limit of open WebSocket connections."""
    return ApiError(503, "server_error", f"this server already holds {limit} WebSocket "
                    "connections, its limit; retry shortly or on another replica",
                    code="too_many_connections", retry_after_s=1.0)
