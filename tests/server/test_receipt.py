"""Kernel receive stamps (server/transports/receipt.py): a request that waits in the socket
buffer while the server's event loop is blocked is dated by its arrival, not by when its
handler ran, and the wait shows as `receive_ms` in the timing block. Real sockets on loopback
and the real SmolLM2 behind the server."""

from __future__ import annotations

import json
import socket
import threading
import time

import aiohttp
import pytest

from turnspec.server.transports.receipt import (
    StampedSocket,
    kernel_stamps_available,
    stamping_listeners,
)

from .srv_helpers import start_server

BLOCKED_S = 0.2  # how long the test holds the server's loop after the request is sent

pytestmark = pytest.mark.skipif(not kernel_stamps_available(),
                                reason="this platform gives no kernel receive timestamps")


@pytest.fixture(scope="module")
def server(local_engine):
    srv = start_server(local_engine, default_max_tokens=4)
    yield srv
    srv.stop()


def test_accepted_connections_keep_the_kernel_stamp_of_the_last_read():
    lst = stamping_listeners("127.0.0.1", 0)[0]
    lst.setblocking(True)
    with lst, socket.create_connection(lst.getsockname()[:2], timeout=5) as cli:
        conn, _ = lst.accept()
        assert isinstance(conn, StampedSocket)
        with conn:
            conn.settimeout(5)
            for _ in range(100):  # until the kernel's stamping is on (a moment)
                cli.sendall(b"x")
                assert conn.recv(1) == b"x"
                if conn.rx_unix_ns:
                    break
                time.sleep(0.005)
            for read in ("recv", "recv_into"):
                before = time.time_ns()
                cli.sendall(b"hello")
                sent = time.time_ns()
                if read == "recv":
                    assert conn.recv(16) == b"hello"
                else:
                    buf = bytearray(16)
                    assert conn.recv_into(buf, 8) == 5 and bytes(buf[:5]) == b"hello"
                assert before <= conn.rx_unix_ns <= sent, read


def _hold_loop(srv, sent: threading.Event) -> None:
    """Block the server's event loop until the client has sent, then BLOCKED_S more."""
    holding = threading.Event()

    def hold() -> None:
        holding.set()
        sent.wait(10)
        time.sleep(BLOCKED_S)

    srv.loop.call_soon_threadsafe(hold)
    assert holding.wait(10)


def test_http_request_waiting_for_a_blocked_loop_is_dated_by_its_arrival(server):
    body = json.dumps({"model": "m", "max_tokens": 2,
                       "messages": [{"role": "user", "content": "Hi"}]}).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as cli:
        sent = threading.Event()
        _hold_loop(server, sent)
        cli.sendall(head + body)
        sent_ns = time.time_ns()
        sent.set()
        raw = b""
        while chunk := cli.recv(65536):
            raw += chunk
    status, _, payload = raw.partition(b"\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 200"), status
    timing = json.loads(payload)["turnspec"]["timing"]
    # the handler ran >= BLOCKED_S after sent_ns; the arrival is before it
    assert timing["server_received_unix_us"] <= sent_ns // 1000 + 1
    assert timing["receive_ms"] >= BLOCKED_S * 1000
    assert timing["host_overhead_ms"] >= timing["receive_ms"]


async def test_ws_message_waiting_for_a_blocked_loop_is_dated_by_its_arrival(server):
    create = {"type": "response.create", "response": {
        "input": [{"role": "user", "content": "Hi"}], "max_output_tokens": 2}}
    async with aiohttp.ClientSession() as http, \
            http.ws_connect(f"ws://127.0.0.1:{server.port}/v1/responses") as ws:
        sent = threading.Event()
        _hold_loop(server, sent)
        await ws.send_str(json.dumps(create))
        sent_ns = time.time_ns()
        sent.set()
        while True:
            ev = json.loads((await ws.receive(timeout=60)).data)
            assert ev["type"] != "error", ev
            if ev["type"] in ("response.completed", "response.incomplete"):
                break
    timing = ev["response"]["turnspec"]["timing"]
    assert timing["server_received_unix_us"] <= sent_ns // 1000 + 1
    assert timing["receive_ms"] >= BLOCKED_S * 1000


def test_http_probe_reports_the_time_it_was_held(server):
    head = b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as cli:
        sent = threading.Event()
        _hold_loop(server, sent)
        cli.sendall(head)
        sent.set()
        raw = b""
        while chunk := cli.recv(65536):
            raw += chunk
    headers = raw.partition(b"\r\n\r\n")[0].decode().lower().split("\r\n")
    timing = next(h for h in headers if h.startswith("server-timing:"))
    held_ms = float(timing.split("dur=")[1])
    assert held_ms >= BLOCKED_S * 1000  # the loop was held after the request had arrived


async def test_ws_pong_reports_the_time_it_was_held(server):
    async with aiohttp.ClientSession() as http, \
            http.ws_connect(f"ws://127.0.0.1:{server.port}/v1/responses") as ws:
        sent = threading.Event()
        _hold_loop(server, sent)
        await ws.send_str(json.dumps({"type": "ping", "event_id": "p1"}))
        sent.set()
        pong = json.loads((await ws.receive(timeout=60)).data)
    assert pong["type"] == "pong" and pong["event_id"] == "p1"
    t = pong["turnspec"]
    assert t["t_us"] - t["received_us"] >= BLOCKED_S * 1e6
