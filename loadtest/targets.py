"""Targets by URL -> the transport clients, one `Link` per conversation.

    ws://host:port/v1/responses   Responses WebSocket mode (one connection per conversation)
    grpc://host:port              turnspec.v1.Generation (one channel for the run)
    http://host:port/v1           OpenAI chat completions, streamed (one keep-alive pool)
    http://host:port/generate     SGLang's native endpoint on token ids: each turn's prompt ids
                                  (and structural tag) from a `turnspec workload render` file

Any server speaking the protocol is a target (SGLang's or vLLM's OpenAI server over HTTP).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import aiohttp

from turnspec.loadtest.clients import (
    ChatCompletionsClient,
    GenerationClient,
    ResponsesSocketClient,
)
from turnspec.loadtest.generate_client import GenerateClient, sampling_params
from turnspec.loadtest.record import RequestRecord
from turnspec.loadtest.responses_input import responses_items, responses_tools, ws_turn_input
from turnspec.loadtest.token_table import TokenTable, tools_key
from turnspec.loadtest.workload import ScriptTurn
from turnspec.tools_grammar.parser import ToolCallStreamParser
from turnspec.tools_grammar.schema import ToolSpec, parse_tools

_SCHEMES = {"ws": "ws", "wss": "ws", "http": "http", "https": "http", "grpc": "grpc"}
LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass(slots=True, frozen=True)
class Target:
    url: str  # normalised: ws(s)://.../v1/responses, http(s)://.../v1 or .../generate,
    # grpc://host:port
    transport: str  # "ws" | "http" | "grpc" | "generate"
    host: str
    port: int

    def __post_init__(self) -> None:
        if self.transport not in ("ws", "http", "grpc", "generate"):
            raise ValueError(f"transport: expected ws, http, grpc or generate, got "
                             f"{self.transport!r}")
        if not self.host or not 0 < self.port < 65536:
            raise ValueError(f"{self.url}: expected a host and a port in 1..65535")

    @classmethod
    def parse(cls, url: str) -> Target:
        parts = urlsplit(url)
        transport = _SCHEMES.get(parts.scheme)
        if transport is None:
            raise ValueError(f"--url {url!r}: expected ws://HOST:PORT/v1/responses, "
                             "grpc://HOST:PORT, http://HOST:PORT/v1 or http://HOST:PORT/generate")
        try:
            port = parts.port or {"ws": 80, "wss": 443, "http": 80, "https": 443,
                                  "grpc": 50051}[parts.scheme]
        except ValueError as e:
            raise ValueError(f"--url {url!r}: {e}") from None
        path = parts.path.rstrip("/")
        base = f"{parts.scheme}://{parts.netloc}"
        if transport == "ws":
            normal = base + (path or "/v1/responses")
        elif transport == "http" and path.endswith("/generate"):
            transport, normal = "generate", base + path
        elif transport == "http":
            path = path.removesuffix("/chat/completions")
            normal = base + (path or "/v1")
        else:
            normal = base
        return cls(normal, transport, parts.hostname or "", port)

    @property
    def loopback(self) -> bool:
        """Client and server share a clock, so one-way times from server timestamps are real."""
        return self.host in LOOPBACK


class Link(Protocol):
    """One conversation's connection (a WS socket; a share of the HTTP pool or gRPC channel)."""

    async def probe_rtt(self) -> float | None: ...

    async def send(self, turn: ScriptTurn, tools: tuple[dict[str, Any], ...],
                   prev_turn: ScriptTurn | None, prev: RequestRecord | None, *,
                   temperature: float | None, cancel_after: int | None,
                   tool_choice: str | None = None) -> RequestRecord: ...

    async def close(self) -> None: ...


class _HttpLink:
    def __init__(self, client: ChatCompletionsClient) -> None:
        self.client = client

    async def probe_rtt(self) -> float | None:
        return await self.client.probe_rtt()

    async def send(self, turn: ScriptTurn, tools: tuple[dict[str, Any], ...],
                   prev_turn: ScriptTurn | None, prev: RequestRecord | None, *,
                   temperature: float | None, cancel_after: int | None,
                   tool_choice: str | None = None) -> RequestRecord:
        return await self.client.complete(list(turn.history), tools=list(tools) or None,
                                          tool_choice=tool_choice, max_tokens=turn.max_tokens,
                                          temperature=temperature,
                                          cancel_after_chunks=cancel_after)

    async def close(self) -> None:
        pass  # the pool is the run's


class _GrpcLink:
    def __init__(self, client: GenerationClient) -> None:
        self.client = client

    async def probe_rtt(self) -> float | None:
        return await self.client.probe_rtt()

    async def send(self, turn: ScriptTurn, tools: tuple[dict[str, Any], ...],
                   prev_turn: ScriptTurn | None, prev: RequestRecord | None, *,
                   temperature: float | None, cancel_after: int | None,
                   tool_choice: str | None = None) -> RequestRecord:
        return await self.client.generate(list(turn.history), tools=list(tools) or None,
                                          tool_choice=tool_choice, max_tokens=turn.max_tokens,
                                          temperature=temperature,
                                          cancel_after_chunks=cancel_after)

    async def close(self) -> None:
        pass  # the channel is the run's


class _WsLink:
    def __init__(self, client: ResponsesSocketClient, resend_history: bool = False) -> None:
        self.client = client
        self.resend_history = resend_history

    async def probe_rtt(self) -> float | None:
        return await self.client.probe_rtt()

    async def send(self, turn: ScriptTurn, tools: tuple[dict[str, Any], ...],
                   prev_turn: ScriptTurn | None, prev: RequestRecord | None, *,
                   temperature: float | None, cancel_after: int | None,
                   tool_choice: str | None = None) -> RequestRecord:
        items, prev_id, resync = ((responses_items(turn.history), None, False)
                                  if self.resend_history else ws_turn_input(turn, prev_turn, prev))
        rec = await self.client.create(items, tools=responses_tools(tools) or None,
                                       tool_choice=tool_choice, previous_response_id=prev_id,
                                       max_output_tokens=turn.max_tokens,
                                       temperature=temperature,
                                       cancel_after_chunks=cancel_after)
        rec.resync = resync
        return rec

    async def close(self) -> None:
        await self.client.close()


class _GenerateLink:
    """SGLang's `/generate` on the token ids turnspec renders for the turn (its ids and
    structural tag from the rendered workload file), parsed as turnspec's server would: with
    the turn's tools unless there are none or tool_choice is none."""

    def __init__(self, client: GenerateClient, table: TokenTable) -> None:
        self.client = client
        self.table = table
        self._specs: dict[str, list[ToolSpec]] = {}

    async def probe_rtt(self) -> float | None:
        return await self.client.probe_rtt()

    async def send(self, turn: ScriptTurn, tools: tuple[dict[str, Any], ...],
                   prev_turn: ScriptTurn | None, prev: RequestRecord | None, *,
                   temperature: float | None, cancel_after: int | None,
                   tool_choice: str | None = None) -> RequestRecord:
        try:
            ids = self.table.prompt(tools if self.table.tools_in_prompt else (), turn.history)
            grammar = bool(tools) and tool_choice != "none"
            tag = self.table.tag(tools, tool_choice or "auto") if grammar else None
        except KeyError as e:
            rec = RequestRecord("generate")
            rec.begin()
            return rec.fail({"code": "no_token_ids", "message": str(e.args[0])})
        parser = ToolCallStreamParser(self.table.tool_format, self._tool_specs(tools)) \
            if grammar else None
        params = sampling_params(max_tokens=turn.max_tokens, temperature=temperature,
                                 structural_tag=tag)
        return await self.client.generate(ids, params, parser=parser,
                                          cancel_after_chunks=cancel_after)

    def _tool_specs(self, tools: tuple[dict[str, Any], ...]) -> list[ToolSpec]:
        key = tools_key(tools)
        if key not in self._specs:
            self._specs[key] = parse_tools(list(tools))
        return self._specs[key]

    async def close(self) -> None:
        pass  # the pool is the run's


class Connector:
    """The run's shared client (HTTP pool, gRPC channel); `open()` gives a conversation its
    `Link` (a new WebSocket for WS; raises aiohttp/OS errors when the server is unreachable)."""

    def __init__(self, target: Target, *, api_key: str | None = None, model: str | None = None,
                 max_connections: int = 256, tokens: TokenTable | None = None,
                 resend_history: bool = False) -> None:
        self.target = target
        self.api_key = api_key
        self.model = model
        self.resend_history = resend_history  # WS: every turn sends its whole history
        self._http: ChatCompletionsClient | None = None
        self._grpc: GenerationClient | None = None
        self._generate: GenerateClient | None = None
        self._tokens = tokens
        if target.transport == "generate":
            if tokens is None:
                raise ValueError(f"{target.url}: a /generate target takes token ids: play a "
                                 "`turnspec workload render` file (--workload FILE)")
            self._generate = GenerateClient(target.url, api_key, max_connections)
        elif target.transport == "http":
            self._http = ChatCompletionsClient(target.url, api_key, max_connections,
                                               model=model or "turnspec")
        elif target.transport == "grpc":
            self._grpc = GenerationClient(f"{target.host}:{target.port}", api_key)

    async def open(self) -> Link:
        if self._http is not None:
            return _HttpLink(self._http)
        if self._grpc is not None:
            return _GrpcLink(self._grpc)
        if self._generate is not None:
            assert self._tokens is not None
            return _GenerateLink(self._generate, self._tokens)
        return _WsLink(await ResponsesSocketClient(self.target.url, self.api_key).connect(),
                       self.resend_history)

    async def preflight(self) -> str | None:
        """None when the target answers a round trip, else what went wrong. Over HTTP without
        --model, takes the model name from GET /v1/models (vLLM/SGLang check it)."""
        try:
            link = await self.open()
        except (aiohttp.ClientError, OSError) as e:
            return f"cannot connect to {self.target.url}: {e or type(e).__name__}"
        try:
            if await link.probe_rtt() is None:
                return f"{self.target.url} did not answer a round-trip probe"
            if self._http is not None and self.model is None:
                self._http.model = await self._http.served_model() or self._http.model
        finally:
            await link.close()
        return None

    async def close(self) -> None:
        for c in (self._http, self._grpc, self._generate):
            if c is not None:
                await c.close()

