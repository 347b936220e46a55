"""A minimal WebSocket client over asyncio streams that sends exactly the bytes it is told:
invalid UTF-8 in a text frame, reserved opcodes, unmasked or truncated frames. The fuzzer needs
that; well-behaved clients (aiohttp, loadtest) refuse to produce them."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import socket
import struct
from typing import Any

TEXT, BINARY, CLOSE, PING = 0x1, 0x2, 0x8, 0x9


class Closed(Exception):
    """The server closed the connection; `code` is its close code (None: no close frame)."""

    def __init__(self, code: int | None) -> None:
        super().__init__(f"closed ({code})")
        self.code = code


class RawSocket:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def connect(cls, host: str, port: int, path: str = "/v1/responses",
                      headers: dict[str, str] | None = None, rcvbuf: int | None = None,
                      timeout: float = 10.0) -> RawSocket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:  # before connect, so the window is small from the start
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, (host, port))
        reader, writer = await asyncio.open_connection(sock=sock)
        key = base64.b64encode(os.urandom(16)).decode()
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        writer.write((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                      f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                      f"Sec-WebSocket-Version: 13\r\n{extra}\r\n").encode())
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
        status = int(head.split(b" ", 2)[1])
        if status != 101:
            writer.close()
            raise ConnectionError(f"upgrade refused with HTTP {status}")
        return cls(reader, writer)

    def send_frame(self, payload: bytes, opcode: int = TEXT, *, fin: bool = True,
                   mask: bool = True) -> None:
        head = bytes([(0x80 if fin else 0) | opcode])
        n = len(payload)
        m = 0x80 if mask else 0
        if n < 126:
            head += bytes([m | n])
        elif n < 1 << 16:
            head += bytes([m | 126]) + struct.pack("!H", n)
        else:
            head += bytes([m | 127]) + struct.pack("!Q", n)
        if mask:
            key = os.urandom(4)
            body = bytes(b ^ key[i % 4] for i, b in enumerate(payload)) if n < 4096 \
                else _xor(payload, key)
            self.writer.write(head + key + body)
        else:
            self.writer.write(head + payload)

    def send_text(self, text: str | bytes) -> None:
        self.send_frame(text.encode() if isinstance(text, str) else text, TEXT)

    def send_json(self, obj: Any) -> None:
        self.send_text(json.dumps(obj))

    def send_raw(self, data: bytes) -> None:
        self.writer.write(data)

    async def drain(self) -> None:
        await self.writer.drain()

    async def recv(self, timeout: float = 10.0) -> dict[str, Any]:
        """The next text frame as JSON; raises Closed on a close frame or EOF."""
        while True:
            opcode, payload = await asyncio.wait_for(self._frame(), timeout)
            if opcode == CLOSE:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
                raise Closed(code)
            if opcode == TEXT:
                return json.loads(payload)

    async def _frame(self) -> tuple[int, bytes]:
        try:
            b0, b1 = await self.reader.readexactly(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", await self.reader.readexactly(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", await self.reader.readexactly(8))[0]
            return b0 & 0x0F, await self.reader.readexactly(n)
        except (asyncio.IncompleteReadError, ConnectionError):
            raise Closed(None) from None

    def abort(self) -> None:
        """RST: close with SO_LINGER 0, no close frame."""
        sock = self.writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self.writer.wait_closed()


def _xor(data: bytes, key: bytes) -> bytes:
    n = len(data)
    k = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(data, "little") ^ int.from_bytes(k, "little")).to_bytes(n, "little")
