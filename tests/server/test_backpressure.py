"""A stalled client (one that never reads) cannot stall other sessions: its sends block only
its own turn, which is cancelled after `send_timeout_s` with a logged reason and its
connection aborted, while another client streams on. Uses the deliberately fake fixed-rate
engine: it emits tokens as fast as needed to fill the socket buffers in seconds."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from turnspec.benchmarks.stress.rawws import Closed, RawSocket
from turnspec.engine.chat import ChatTemplate
from turnspec.engine.fake import FakeFixedRateEngine
from turnspec.loadtest.clients import ChatCompletionsClient, ResponsesSocketClient

from .srv_helpers import assert_serves_normally, start_server

TOKENS = 400_000  # ~100 MB of events: far more than any socket buffer


@pytest.fixture(scope="module")
def fast_fake(smollm2_dir):
    return FakeFixedRateEngine(ChatTemplate.from_model_dir(smollm2_dir), first_token_ms=0.0,
                               interval_ms=0.001, tokens_per_request=TOKENS,
                               max_context=2 * TOKENS)


async def _stall_ws(port: int) -> RawSocket:
    ws = await RawSocket.connect("127.0.0.1", port, rcvbuf=4096)
    ws.send_json({"type": "response.create", "input": "hi", "max_output_tokens": TOKENS})
    await ws.drain()
    return ws  # and never read again


async def test_a_stalled_ws_client_loses_its_turn_and_others_stream_on(fast_fake, caplog):
    caplog.set_level(logging.WARNING, logger="turnspec.server")
    srv = start_server(fast_fake, send_timeout_s=1.0, default_max_tokens=TOKENS)
    try:
        stalled = await _stall_ws(srv.port)
        await asyncio.sleep(0.5)  # its turn is streaming into full buffers
        other = await ResponsesSocketClient(f"ws://127.0.0.1:{srv.port}/v1/responses").connect()
        try:
            rec = await asyncio.wait_for(other.create("hi", max_output_tokens=2000), 60)
        finally:
            await other.close()
        assert rec.ok and rec.usage["output_tokens"] == 2000  # not held up by the stalled one
        for _ in range(600):  # the stalled turn is cancelled and released
            if srv.hub.in_flight == 0:
                break
            await asyncio.sleep(0.05)
        assert srv.hub.in_flight == 0
        assert "the client read nothing for 1.0 s" in caplog.text
        with pytest.raises(Closed):  # its connection was aborted
            while True:
                await stalled.recv(timeout=30)
        stalled.abort()
        await assert_serves_normally(srv.port, fake=True)
    finally:
        srv.stop()


async def test_a_stalled_http_stream_is_cancelled(fast_fake, caplog):
    caplog.set_level(logging.WARNING, logger="turnspec.server")
    srv = start_server(fast_fake, send_timeout_s=1.0, default_max_tokens=TOKENS)
    try:
        body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "stream": True,
                           "max_tokens": TOKENS}).encode()
        reader, writer = await asyncio.open_connection("127.0.0.1", srv.port, limit=4096)
        writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                     b"application/json\r\nContent-Length: " + str(len(body)).encode()
                     + b"\r\n\r\n" + body)
        await writer.drain()  # and never read
        http = ChatCompletionsClient(f"http://127.0.0.1:{srv.port}/v1")
        try:
            rec = await asyncio.wait_for(http.complete([{"role": "user", "content": "hi"}],
                                                       max_tokens=500), 60)
        finally:
            await http.close()
        assert rec.ok and rec.usage["completion_tokens"] == 500
        # the stalled turn may still be starting (its prompt renders off the loop): wait for
        # its cancellation, not merely for nothing to be in flight
        for _ in range(600):
            if srv.hub.in_flight == 0 and "read nothing for 1.0 s" in caplog.text:
                break
            await asyncio.sleep(0.05)
        assert srv.hub.in_flight == 0
        assert "http req_" in caplog.text and "read nothing for 1.0 s" in caplog.text
        writer.transport.abort()
        await assert_serves_normally(srv.port, fake=True)
    finally:
        srv.stop()
