"""The disconnect storm: N clients start a turn and drop it mid-generation, in six ways spread
over the transports: WS close frame, WS reset (RST, no close frame), WS reset before any
output, HTTP stream closed, gRPC cancel, gRPC deadline. Then: how long until every KV block is
back and no sequence runs (the issue's bound: 1 s), and how many blocks never come back."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import grpc

from turnspec.benchmarks.stress.rawws import Closed, RawSocket
from turnspec.server.proto.turnspec.v1 import generation_pb2 as pb
from turnspec.server.proto.turnspec.v1 import generation_pb2_grpc as pb_grpc

MODES = ("ws_close", "ws_reset", "ws_reset_early", "http_close", "grpc_cancel",
         "grpc_deadline")
PROMPT = "Tell me a long story about a lighthouse keeper and the sea."


@dataclass(slots=True)
class StormResult:
    clients: int
    dropped: Counter = field(default_factory=Counter)  # mode -> clients that dropped mid-turn
    failures: list[str] = field(default_factory=list)  # clients that never got going
    seconds: float = 0.0  # first connect -> last drop

    def as_dict(self) -> dict[str, Any]:
        return {"clients": self.clients, "dropped": dict(self.dropped),
                "failures": self.failures[:20], "seconds": round(self.seconds, 2)}


async def _ws(host: str, port: int, mode: str, auth: dict[str, str], timeout: float) -> None:
    ws = await RawSocket.connect(host, port, headers=auth)
    try:
        ws.send_json({"type": "response.create", "input": PROMPT, "max_output_tokens": 256})
        await ws.drain()
        if mode != "ws_reset_early":
            while (await ws.recv(timeout)).get("type") != "response.output_text.delta":
                pass
        if mode == "ws_close":
            ws.send_frame(b"\x03\xe8", opcode=0x8)  # close 1000
            await ws.drain()
            await ws.close()
        else:
            ws.abort()
    except BaseException:
        ws.abort()
        raise


async def _http(http: aiohttp.ClientSession, url: str, auth: dict[str, str],
                timeout: float) -> None:
    body = {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": 256,
            "stream": True}
    async with http.post(url, json=body, headers=auth,
                         timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
        if resp.status != 200:
            raise ConnectionError(f"HTTP {resp.status}: {await resp.text()}")
        async for line in resp.content:
            if line.startswith(b"data: ") and b'"content":"' in line and b'"content":""' \
                    not in line:
                break
        resp.close()  # drops the connection mid-stream


async def _grpc(stub: pb_grpc.GenerationStub, mode: str, meta: tuple, timeout: float) -> None:
    req = pb.GenerateRequest(messages=[pb.Message(role="user", content=PROMPT)],
                             sampling=pb.SamplingParams(max_tokens=256))
    if mode == "grpc_deadline":  # the deadline expires mid-stream (or in the queue)
        call = stub.Generate(req, metadata=meta, timeout=1.0)
        try:
            async for _ in call:
                pass
        except grpc.aio.AioRpcError as e:
            if e.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                raise
        return
    call = stub.Generate(req, metadata=meta, timeout=timeout)
    async for msg in call:
        if msg.HasField("delta") and msg.delta.text:
            break
    call.cancel()


async def run_storm(host: str, port: int, grpc_port: int, clients: int, *,
                    api_key: str | None = None, timeout_s: float = 300.0,
                    modes: tuple[str, ...] = MODES,
                    on_drop: Callable[[str], None] | None = None) -> StormResult:
    """Start `clients` turns at once, each dropped in one of `modes` (round robin);
    `on_drop(mode)` after each drop."""
    auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    meta = (("authorization", auth["Authorization"]),) if auth else ()
    result = StormResult(clients)
    t0 = time.perf_counter()
    channel = grpc.aio.insecure_channel(f"{host}:{grpc_port}")
    stub = pb_grpc.GenerationStub(channel)
    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=conn) as http:
        async def one(i: int) -> None:
            mode = modes[i % len(modes)]
            try:
                if mode.startswith("ws"):
                    await _ws(host, port, mode, auth, timeout_s)
                elif mode == "http_close":
                    await _http(http, f"http://{host}:{port}/v1/chat/completions", auth,
                                timeout_s)
                else:
                    await _grpc(stub, mode, meta, timeout_s)
                result.dropped[mode] += 1
            except (Closed, ConnectionError, OSError, TimeoutError, aiohttp.ClientError,
                    grpc.aio.AioRpcError, json.JSONDecodeError) as e:
                result.failures.append(f"{mode}: {type(e).__name__}: {e}"[:200])
            if on_drop is not None:
                on_drop(mode)
        await asyncio.gather(*(one(i) for i in range(clients)))
    await channel.close()
    result.seconds = time.perf_counter() - t0
    return result
