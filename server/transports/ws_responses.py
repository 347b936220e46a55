"""WebSocket `/v1/responses`: the subset of OpenAI's Responses WebSocket mode that pipecat's
`OpenAIResponsesLLMService(ws_url=...)` speaks.

Client: `response.create` (fields at the top level, or nested under `response`),
`response.cancel`, and `ping` (answered `pong` at once, for a client's RTT).
Server: `response.created`, `response.output_item.added`, `response.content_part.added`, `response.output_text.delta`/`.done`,
`response.content_part.done`, `response.function_call_arguments.delta`/`.done`,
`response.output_item.done`, then one terminal event: `response.completed`;
`response.incomplete` (max_output_tokens, or status "cancelled" after `response.cancel`:
pipecat drains until completed/failed/incomplete); `response.failed` (engine error). Bad
input gets an `error` event (OpenAI shape, plus `status`) and the connection stays open.
`previous_response_id` continues a turn this connection remembers; an unknown one gets
code `previous_response_not_found`, on which pipecat resends the full context.
`generate: false` is a warm-up: no output (`response.created`, then `response.completed` with
no items); the tools' grammar is prepared from then on and the input is kept for the next
turn's `previous_response_id` (server/grammars.py).
One response at a time per connection, as in OpenAI's WebSocket mode. Every server event
carries `turnspec.t_us`, the server's wall clock (µs) when it was built.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from aiohttp import WSMsgType, web

from turnspec.server.errors import ApiError, invalid, unexpected
from turnspec.server.events import TurnDone
from turnspec.server.hub import SessionHub
from turnspec.server.session import Session, TurnRequest, new_id
from turnspec.server.timing import now_us
from turnspec.server.transports.backpressure import send_within
from turnspec.server.transports.receipt import received_at
from turnspec.server.transports.responses_events import ResponseEmitter
from turnspec.server.wire import (
    dumps,
    opt_bool,
    opt_int,
    opt_list,
    opt_number,
    opt_str,
    parse_json_object,
    trace_from,
)

_HARD_LIMIT_FACTOR = 4  # beyond soft limit x4 aiohttp closes the socket (1009)
_CLOSING = (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR)
log = logging.getLogger("turnspec.server")


class ResponsesSocket:
    def __init__(self, hub: SessionHub) -> None:
        self.hub = hub
        cfg = hub.config
        self.session = Session(hub, "ws", max_active=1, keep_responses=cfg.ws_kept_responses,
                               session_id=new_id("sess"))
        self.ws = web.WebSocketResponse(max_msg_size=cfg.max_message_bytes * _HARD_LIMIT_FACTOR,
                                        compress=False, autoping=True)
        self._task: asyncio.Task[None] | None = None
        self._emitter: ResponseEmitter | None = None
        self._cancel_early = False  # response.cancel arrived while the turn was starting
        self._trace_headers: dict[str, str] | None = None
        self._transport: asyncio.BaseTransport | None = None

    async def run(self, request: web.Request) -> web.WebSocketResponse:
        # Trace context: the upgrade's headers for the connection; a response.create's
        # metadata.traceparent (per turn) takes precedence.
        self._trace_headers = trace_from(request.headers)
        self._transport = request.transport
        self.hub.ws_connections += 1
        try:
            await self.ws.prepare(request)
            await self._receive_loop()
        finally:
            self.hub.ws_connections -= 1
            if self._task is not None and not self._task.done():
                self._task.cancel()
                await asyncio.gather(self._task, return_exceptions=True)
            await self.session.close()
        return self.ws

    async def _receive_loop(self) -> None:
        """Frames until the client closes, stalls, or stays idle (no frame and no turn in
        progress) for `ws_idle_timeout_s`."""
        idle_s = self.hub.config.ws_idle_timeout_s
        while True:
            try:
                msg = await self.ws.receive(timeout=idle_s)
            except TimeoutError:
                if self._task is not None and not self._task.done():
                    continue  # a long turn is not idleness
                log.info("ws %s: closed after %.0f s without a message", self.session.session_id,
                         idle_s)
                with contextlib.suppress(ConnectionError):
                    await send_within(self.ws.close(code=1000, message=b"idle timeout"),
                                      self.hub.config.send_timeout_s, self._transport,
                                      f"ws {self.session.session_id}")
                return
            if msg.type in _CLOSING:
                return
            try:
                if msg.type == WSMsgType.TEXT:
                    await self._on_text(msg.data)
                elif msg.type == WSMsgType.BINARY:
                    await self._error(invalid("binary frames are not supported; send JSON text",
                                              code="binary_not_supported"))
            except ConnectionError:
                return  # gone, or stalled and aborted (logged)

    async def _send(self, data: str) -> None:
        """Every server frame goes out through here, bounded by `send_timeout_s`."""
        await send_within(self.ws.send_str(data), self.hub.config.send_timeout_s,
                          self._transport, f"ws {self.session.session_id}")

    async def _error(self, err: ApiError, event_id: Any = None) -> None:
        self.hub.rejected("ws", err)
        payload: dict[str, Any] = {"type": "error", "status": err.status, "error": err.body()}
        if event_id is not None:
            payload["event_id"] = event_id
        if not self.ws.closed:
            await self._send(dumps(payload))

    async def _on_text(self, data: str) -> None:
        received_unix_ms, received_perf = received_at(self._transport)
        if len(data) > self.hub.config.max_message_bytes:
            await self._error(ApiError(
                413, "invalid_request_error",
                f"message of {len(data)} bytes exceeds the limit of "
                f"{self.hub.config.max_message_bytes} bytes", code="message_too_large"))
            return
        try:
            event = parse_json_object(data, "message")
            kind = event.get("type")
            if kind == "response.create":
                await self._create(event, received_unix_ms, received_perf)
            elif kind == "response.cancel":
                await self._cancel(event)
            elif kind == "ping":  # for a client's RTT: answered at once, also mid-turn;
                # received_us (the ping's arrival) .. t_us is its time on this host
                await self._send(dumps({"type": "pong", "event_id": event.get("event_id"),
                                        "turnspec": {"received_us": round(received_unix_ms * 1e3),
                                                     "t_us": now_us()}}))
            else:
                raise invalid(f"type: expected 'response.create', 'response.cancel' or 'ping', "
                              f"got {kind!r}", param="type", code="unknown_event_type")
        except ApiError as e:
            await self._error(e, event_id=None)
        except ConnectionError:
            raise
        except Exception as e:  # a bug: a structured error, the connection stays usable
            log.exception("ws %s: message handling failed", self.session.session_id)
            await self._error(unexpected(e))

    async def _create(self, event: dict[str, Any], received_unix_ms: float,
                      received_perf: float) -> None:
        if self._task is not None and not self._task.done():
            raise ApiError(409, "invalid_request_error",
                           "a response is already in progress on this connection; wait for "
                           "its terminal event or send response.cancel",
                           code="conversation_already_has_active_response")
        body = event["response"] if isinstance(event.get("response"), dict) else event
        req, meta = parse_create(body, received_unix_ms, received_perf)
        # this turn's own traceparent (a field, or in metadata) wins over the upgrade's
        req.trace = trace_from(body, meta["metadata"], self._trace_headers)
        if not meta["generate"]:
            await self._warm_up(req, meta)
            return
        self._cancel_early = False
        self._task = asyncio.create_task(self._run_turn(req, meta))

    async def _warm_up(self, req: TurnRequest, meta: dict[str, Any]) -> None:
        """`generate: false`: no output; the tools' grammar is prepared from now on and the
        input is kept under the response id, for the next turn's `previous_response_id`."""
        response_id = self.session.prepare(req)
        emitter = ResponseEmitter(response_id, self.hub.engine.model_name, meta, self._send)
        await emitter.created(text_only=False)
        await emitter.prepared()

    async def _run_turn(self, req: TurnRequest, meta: dict[str, Any]) -> None:
        try:
            turn = await self.session.start(req, messages_param="input")
        except Exception as e:
            if not isinstance(e, ApiError):
                log.exception("ws %s: turn start failed", self.session.session_id)
            with contextlib.suppress(ConnectionError):  # the client left (or stalled)
                await self._error(e if isinstance(e, ApiError) else unexpected(e))
            return
        emitter = ResponseEmitter(turn.response_id, self.hub.engine.model_name, meta,
                                  self._send)
        self._emitter = emitter
        done = None
        try:
            await emitter.created(text_only=turn.text_only)
            if self._cancel_early:
                await turn.cancel()
            events = turn.events()
            async for ev in events:
                if isinstance(ev, TurnDone):
                    done = ev
                    break
                await emitter.emit(ev)
            await events.aclose()
        except ConnectionError:
            pass  # the client went away; close() aborts the engine request
        finally:
            self._emitter = None
            if done is not None:
                turn.stamp(done)  # the server's E2E ends here: the terminal event is next
            # Release the turn before the terminal event: the client may send its next
            # response.create as soon as it reads it.
            await turn.close()
        if done is not None and not self.ws.closed:
            with contextlib.suppress(ConnectionError):  # released; the client left or stalled
                await emitter.finish(done)

    async def _cancel(self, event: dict[str, Any]) -> None:
        response_id = opt_str(event, "response_id")
        if self._task is None or self._task.done():
            return  # nothing in progress: ignore (an error here would land in the next turn)
        turn = self.session.find(response_id)
        if turn is not None:
            await turn.cancel()
        elif self._emitter is None and response_id is None:
            self._cancel_early = True


def parse_create(body: dict[str, Any], received_unix_ms: float,
                 received_perf: float) -> tuple[TurnRequest, dict[str, Any]]:
    """A `response.create` body -> (TurnRequest, fields echoed in the response object)."""
    from turnspec.server.conversation import messages_from_responses_input

    opt_str(body, "model")
    generate = opt_bool(body, "generate", True) is not False
    if "input" not in body and generate:
        raise invalid("input: required (a string or an array of input items)", param="input")
    metadata = body.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise invalid("metadata: expected an object of string values", param="metadata")
    tool_choice = body.get("tool_choice")
    if tool_choice is not None and not isinstance(tool_choice, (str, dict)):
        raise invalid("tool_choice: expected 'auto', 'none', 'required' or "
                      "{type: 'function', name}", param="tool_choice")
    req = TurnRequest(
        messages=messages_from_responses_input(body.get("input", [])),
        tools=opt_list(body, "tools"),
        tool_choice=tool_choice,
        instructions=opt_str(body, "instructions"),
        previous_response_id=opt_str(body, "previous_response_id"),
        temperature=opt_number(body, "temperature", 0.0, 2.0),
        top_p=opt_number(body, "top_p", 1e-9, 1.0),
        max_tokens=opt_int(body, "max_output_tokens", 1, 1 << 20),
        spec_block_size=opt_int(body, "spec_block_size", 0, 256),
        # turnspec extension: "loop_guard": false turns the server's loop guard off for this turn
        loop_guard=opt_bool(body, "loop_guard", True) if body.get("loop_guard") is not None else None,
        received_unix_ms=received_unix_ms,
        received_perf=received_perf,
    )
    meta = {"instructions": req.instructions, "previous_response_id": req.previous_response_id,
            "metadata": metadata or {}, "temperature": req.temperature, "top_p": req.top_p,
            "max_output_tokens": req.max_tokens, "tool_choice": tool_choice or "auto",
            "tools": req.tools or [], "generate": generate}
    return req, meta
