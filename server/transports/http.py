"""HTTP on the main port (aiohttp): OpenAI chat completions, models, health, metrics, and
the WebSocket upgrade for `/v1/responses`.

A client that disconnects cancels its handler (`handler_cancellation=True` on the runner),
and the turn's `close()` aborts the engine request.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from turnspec.server.errors import ApiError, unexpected
from turnspec.server.events import TurnDone
from turnspec.server.hub import SessionHub
from turnspec.server.limits import too_many_connections
from turnspec.server.session import Session
from turnspec.server.transports.backpressure import send_within
from turnspec.server.transports.openai_chat import ChunkWriter, completion_body, parse_chat_request
from turnspec.server.transports.receipt import received_at, server_timing
from turnspec.server.transports.ws_responses import ResponsesSocket
from turnspec.server.turn import Turn
from turnspec.server.wire import dumps, error_payload, parse_json_object, trace_from
from turnspec.tools_grammar.parser import (
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallDone,
    ToolCallStarted,
)

HUB_KEY = web.AppKey("hub", SessionHub)
log = logging.getLogger("turnspec.server")
_SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no"}


def error_response(err: ApiError) -> web.Response:
    headers = {}
    if err.retry_after_s is not None:
        headers["Retry-After"] = str(max(1, round(err.retry_after_s)))
        headers["retry-after-ms"] = str(int(err.retry_after_s * 1000))
    return web.json_response(error_payload(err), status=err.status, headers=headers)


@web.middleware
async def _errors(request: web.Request, handler: Any) -> web.StreamResponse:
    try:
        return await handler(request)
    except ApiError as e:
        return error_response(e)
    except web.HTTPException as e:  # router 404/405, body over client_max_size (413)
        if e.status < 400:
            raise
        code = {404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}.get(
            e.status, "http_error")
        msg = (f"request body larger than {request.app[HUB_KEY].config.max_message_bytes} "
               "bytes" if e.status == 413 else f"{e.reason}: {request.method} {request.path}")
        return error_response(ApiError(e.status, "invalid_request_error", msg, code=code))
    except ConnectionError:
        raise  # the client is gone: nothing to answer
    except Exception as e:  # a bug: answer in the error shape, keep the traceback in the log
        log.exception("http %s %s failed", request.method, request.path)
        return error_response(unexpected(e))


async def _health(request: web.Request) -> web.Response:
    hub = request.app[HUB_KEY]
    status = ("ok" if hub.serving else "failed" if hub.failed is not None
              else "draining" if hub.draining else "starting")
    body = {"status": status, "model": hub.engine.model_name}
    if hub.failed is not None:
        body["error"] = hub.failed
    return web.json_response(body, status=200 if hub.serving else 503)


async def _metrics(request: web.Request) -> web.Response:
    return web.Response(body=request.app[HUB_KEY].metrics.render(),
                        headers={"Content-Type": CONTENT_TYPE_LATEST})


async def _models(request: web.Request) -> web.Response:
    """The model list; also a load test's RTT probe, so it says how long the request was on
    this host (kernel receipt -> answer; `Server-Timing`, W3C) for the client to subtract."""
    _, received_perf = received_at(request.transport)
    hub = request.app[HUB_KEY]
    _checked(hub, request, "http")
    resp = web.json_response({"object": "list", "data": [{
        "id": hub.engine.model_name, "object": "model", "created": 0, "owned_by": "turnspec",
        "max_context": hub.engine.max_context}]})
    resp.headers["Server-Timing"] = server_timing(received_perf)
    return resp


def _checked(hub: SessionHub, request: web.Request, transport: str) -> None:
    try:
        hub.check_auth(request.headers.get("Authorization"))
    except ApiError as e:
        hub.rejected(transport, e)
        raise


async def _chat_completions(request: web.Request) -> web.StreamResponse:
    received_unix_ms, received_perf = received_at(request.transport)
    hub = request.app[HUB_KEY]
    _checked(hub, request, "http")
    try:
        body = parse_json_object(await request.read())
        req, stream, include_usage = parse_chat_request(body, received_unix_ms, received_perf)
        req.trace = trace_from(request.headers)
    except ApiError as e:
        hub.rejected("http", e)
        raise
    turn = await Session(hub, "http").start(req)
    chat_id = "chatcmpl-" + uuid.uuid4().hex[:24]
    model = hub.engine.model_name
    try:
        if not stream:
            done = None
            async for ev in turn.events():
                if isinstance(ev, TurnDone):
                    done = ev
            assert done is not None
            if done.error is not None:
                return error_response(done.error)
            turn.stamp(done)
            return web.json_response(completion_body(chat_id, model, done))
        return await _stream(request, turn, ChunkWriter(chat_id, model), include_usage)
    finally:
        await turn.close()


async def _stream(request: web.Request, turn: Turn, w: ChunkWriter,
                  include_usage: bool) -> web.StreamResponse:
    resp: web.StreamResponse | None = None
    head = ""  # headers and the role chunk go out with the first event, in one write
    async for ev in turn.events():
        if resp is None:
            if isinstance(ev, TurnDone) and ev.error is not None:
                return error_response(ev.error)  # failed before any output: a plain error
            resp = web.StreamResponse(headers=_SSE_HEADERS)
            await resp.prepare(request)
            head = w.role()
        if isinstance(ev, TextDelta):
            out = w.text(ev.text)
        elif isinstance(ev, ToolCallArgumentsDelta):
            out = w.call_args(ev.index, ev.delta)
        elif isinstance(ev, ToolCallStarted):
            out = w.call_started(ev.index, ev.call_id, ev.name)
        elif isinstance(ev, ToolCallDone):
            out = w.call_done(ev.index, ev.arguments_json) or ""
        elif isinstance(ev, TurnDone):
            turn.stamp(ev)
            out = (f"data: {dumps(error_payload(ev.error))}\n\n" if ev.error is not None
                   else w.finish(ev, include_usage))
        else:
            out = ""
        if head or out:
            try:  # a client that stops reading loses its turn after send_timeout_s
                await send_within(resp.write((head + out).encode()),
                                  turn.hub.config.send_timeout_s, request.transport,
                                  f"http {turn.request_id}")
            except ConnectionError:
                return resp  # gone, or stalled and aborted (logged); close() aborts the turn
            head = ""
    assert resp is not None
    await resp.write_eof()
    return resp


async def _responses_ws(request: web.Request) -> web.StreamResponse:
    hub = request.app[HUB_KEY]
    _checked(hub, request, "ws")  # 401 on the upgrade itself, before any frame
    if hub.ws_connections >= hub.config.max_ws_connections:
        err = too_many_connections(hub.config.max_ws_connections)
        hub.rejected("ws", err)
        raise err
    return await ResponsesSocket(hub).run(request)


def build_http_app(hub: SessionHub) -> web.Application:
    app = web.Application(middlewares=[_errors], client_max_size=hub.config.max_message_bytes)
    app[HUB_KEY] = hub
    app.router.add_post("/v1/chat/completions", _chat_completions)
    app.router.add_get("/v1/models", _models)
    app.router.add_get("/v1/responses", _responses_ws)
    app.router.add_get("/health", _health)
    app.router.add_get("/metrics", _metrics)
    return app


def forget_stopped_apps() -> None:
    """Let stopped apps, and the hub and engine each holds, be freed (ServerApp.shutdown calls
    it). aiohttp keeps each app's middleware chain in a module-level cache keyed by the app
    (1,024 entries), so in a process that starts server after server (the test suite, a bench)
    every engine stayed alive: the suite's workers grew ~2 GB per server-owning test module until
    the 24 GiB CI box killed one."""
    from aiohttp import web_app

    cache = getattr(web_app, "_cached_build_middleware", None)
    if cache is not None and hasattr(cache, "cache_clear"):
        cache.cache_clear()
