"""When a request reached this host: the kernel's receive timestamp of its bytes.

A handler's first line runs when the event loop gets to it. On a loaded host (the engine's
threads holding the cores) the loop can wake milliseconds after a request landed in the socket
buffer, and a receive stamp taken there leaves that wait between the client and the server,
where neither the RTT probe nor the timing block accounts for it. The kernel stamps every
received packet when asked (`SO_TIMESTAMPNS`, Linux) and hands the stamp of the last bytes
read to `recvmsg` as ancillary data; the HTTP/WS listener's connections read through
`recvmsg`, so a handler can date its request from the kernel's stamp and the wait counts as
server time (the timing block's `receive_ms`, part of `host_overhead_ms`).

`StampingListener` is the listening socket: each connection it accepts is a `StampedSocket`
with timestamps on, which the asyncio transport reads through its `recv`/`recv_into`.
`received_at(transport)` gives a handler its request's (unix ms, perf_counter s): the kernel's
stamp of the latest bytes read on that connection (the request's own, or a later message's:
never earlier than the request), or now where the platform gives no stamp (gRPC, whose
sockets gRPC's core reads, and non-Linux hosts).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
import struct
import time
import weakref
from typing import Any

# Linux values; the socket module does not export them.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
_TIMESPEC = struct.Struct("@qq")  # struct timespec on 64-bit Linux: seconds, nanoseconds
_ANCILLARY = socket.CMSG_SPACE(_TIMESPEC.size)

# accepted connections by file descriptor; the transport hands handlers a wrapper of the socket
_LIVE: weakref.WeakValueDictionary[int, StampedSocket] = weakref.WeakValueDictionary()


class StampedSocket(socket.socket):
    """A connection whose reads keep the kernel's receive stamp of the last bytes read."""

    rx_unix_ns: int = 0  # 0 when the last read brought no stamp (never an older read's)

    def _note(self, ancillary: list[tuple[int, int, bytes]]) -> None:
        self.rx_unix_ns = 0
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS \
                    and len(data) >= _TIMESPEC.size:
                sec, nsec = _TIMESPEC.unpack_from(data)
                self.rx_unix_ns = sec * 1_000_000_000 + nsec

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        data, ancillary, _, _ = self.recvmsg(bufsize, _ANCILLARY, flags)
        self._note(ancillary)
        return data

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        view = memoryview(buffer).cast("B")
        n, ancillary, _, _ = self.recvmsg_into([view[:nbytes] if nbytes else view],
                                               _ANCILLARY, flags)
        self._note(ancillary)
        return n


class StampingListener(socket.socket):
    """A listening socket whose accepted connections are `StampedSocket`s with receive
    timestamps on."""

    def accept(self) -> tuple[StampedSocket, Any]:
        fd, addr = self._accept()  # type: ignore[attr-defined]
        conn = StampedSocket(self.family, self.type, self.proto, fileno=fd)
        if socket.getdefaulttimeout() is None and self.gettimeout():
            conn.setblocking(True)  # as socket.accept does
        # no kernel stamps on this platform: received_at() dates requests by the handler
        with contextlib.suppress(OSError):
            conn.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        _LIVE[fd] = conn
        return conn, addr


def stamping_listeners(host: str, port: int, backlog: int = 128) -> list[StampingListener]:
    """Bind every address `host` resolves to (all interfaces for '' or '0.0.0.0'-style
    wildcards, both families for 'localhost') on one port (port 0: the first bind picks it)
    and listen."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                               flags=socket.AI_PASSIVE)
    socks: list[StampingListener] = []
    try:
        for family, kind, proto, _, addr in dict.fromkeys(infos):
            sock = StampingListener(family, kind, proto)
            socks.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # on the listener too: the kernel turns packet stamping on a moment after the
            # first socket asks and off when the last one closes, so a connection that asked
            # only when accepted could find its first request unstamped
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if socks[0] is not sock:
                addr = (addr[0], socks[0].getsockname()[1], *addr[2:])
            sock.bind(addr)
            sock.listen(backlog)
            sock.setblocking(False)
    except OSError:
        for sock in socks:
            sock.close()
        raise
    if not socks:
        raise OSError(f"--host {host!r}: resolves to no address to listen on")
    return socks


@functools.cache
def kernel_stamps_available() -> bool:
    """Whether this platform stamps received TCP bytes (checked once, on a loopback pair: every
    server start and test module asks)."""
    try:
        with stamping_listeners("127.0.0.1", 0)[0] as lst:
            lst.setblocking(True)
            with socket.create_connection(lst.getsockname()[:2], timeout=2) as cli:
                conn, _ = lst.accept()
                with conn:
                    conn.settimeout(2)
                    for _ in range(20):  # stamping may take a moment to switch on
                        cli.sendall(b"x")
                        conn.recv(1)
                        if conn.rx_unix_ns > 0:
                            return True
                        time.sleep(0.005)
                    return False
    except OSError:
        return False


def received_at(transport: asyncio.BaseTransport | None) -> tuple[float, float]:
    """(unix ms, `time.perf_counter()` s) when the latest request on `transport` reached the
    host: the kernel's stamp of the last bytes read on the connection where there is one,
    else now."""
    perf, unix_ns = time.perf_counter(), time.time_ns()
    sock = transport.get_extra_info("socket") if transport is not None else None
    fd = sock.fileno() if sock is not None else -1
    conn = _LIVE.get(fd) if fd >= 0 else None
    rx = conn.rx_unix_ns if conn is not None and conn.fileno() == fd else 0
    if rx <= 0 or rx > unix_ns:
        return unix_ns / 1e6, perf
    return rx / 1e6, perf - (unix_ns - rx) / 1e9


def server_timing(received_perf: float) -> str:
    """A `Server-Timing` header value (W3C) with this host's time on the request so far:
    `turnspec;dur=MS` from its arrival (`received_at`) to now."""
    return f"turnspec;dur={(time.perf_counter() - received_perf) * 1000.0:.3f}"
