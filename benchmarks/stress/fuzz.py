"""The socket-level fuzzer: sends `hostile.cases` to a live server and judges every answer.

A message is *answered* when it gets a structured error (WS `error` event / HTTP JSON
`{"error": {type, message, code}}` / a gRPC status other than UNKNOWN), a pong, or a turn that
streams to its terminal event; a connection may instead end in a *clean close* (a close frame
with 1000/1002/1003/1007/1008/1009). Silent-by-design messages (`response.cancel` with nothing
to cancel) are judged by the ping sent after them. Anything else is *bad*: no answer within
the timeout, a dropped connection, a 5xx that is not in the error shape, a gRPC UNKNOWN."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import grpc

from turnspec.benchmarks.stress.hostile import Case
from turnspec.benchmarks.stress.rawws import Closed, RawSocket
from turnspec.server.proto.turnspec.v1 import generation_pb2 as pb
from turnspec.server.proto.turnspec.v1 import generation_pb2_grpc as pb_grpc

CLEAN_CLOSES = (1000, 1002, 1003, 1007, 1008, 1009)
TERMINAL = ("response.completed", "response.incomplete", "response.failed")


@dataclass(slots=True)
class FuzzResult:
    messages: int = 0
    cases: int = 0
    answered: int = 0  # messages with a structured answer
    clean_closes: int = 0  # cases that ended in a clean close
    internal_errors: int = 0  # structured 5xx / INTERNAL answers (bugs found, not crashes)
    bad: int = 0  # messages with no acceptable answer
    bad_examples: list[str] = field(default_factory=list)
    codes: Counter = field(default_factory=Counter)  # error code / close code -> count
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"messages": self.messages, "cases": self.cases, "answered": self.answered,
                "clean_closes": self.clean_closes, "internal_errors": self.internal_errors,
                "bad": self.bad, "bad_examples": self.bad_examples[:20],
                "codes": dict(self.codes.most_common()), "seconds": round(self.seconds, 1)}

    def _bad(self, case: Case, n: int, why: str) -> None:
        self.bad += n
        self.bad_examples.append(f"{case.transport}/{case.kind}: {why}")


class Fuzzer:
    def __init__(self, host: str, port: int, grpc_port: int | None, *,
                 api_key: str | None = None, timeout_s: float = 60.0) -> None:
        self.host, self.port, self.grpc_port = host, port, grpc_port
        self.auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout_s = timeout_s
        self.result = FuzzResult()

    async def run(self, cases: list[Case], concurrency: int = 16) -> FuzzResult:
        t0 = time.perf_counter()
        sem = asyncio.Semaphore(concurrency)
        async with aiohttp.ClientSession() as http:
            channel = grpc.aio.insecure_channel(f"{self.host}:{self.grpc_port}") \
                if self.grpc_port else None

            async def one(case: Case) -> None:
                async with sem:
                    self.result.cases += 1
                    self.result.messages += case.messages
                    if case.transport == "ws":
                        await self._ws(case)
                    elif case.transport == "http":
                        await self._http(http, case)
                    elif channel is not None:
                        await self._grpc(channel, case)
            try:
                await asyncio.gather(*(one(c) for c in cases))
            finally:
                if channel is not None:
                    await channel.close()
        self.result.seconds = time.perf_counter() - t0
        return self.result

    # -- WebSocket ------------------------------------------------------------------------------
    async def _ws(self, case: Case) -> None:
        r, n = self.result, case.messages
        try:
            ws = await RawSocket.connect(self.host, self.port, headers=self.auth)
        except (OSError, ConnectionError, TimeoutError) as e:
            r._bad(case, n, f"connect failed: {e}")
            return
        expected = sum(not f.silent for f in case.frames)
        answers, open_turn, sentinel = 0, False, False
        try:
            try:
                for f in case.frames:
                    ws.send_raw(f.payload) if f.raw else ws.send_frame(f.payload, f.opcode)
                ws.send_json({"type": "ping", "event_id": "sentinel"})
                await ws.drain()
            except ConnectionError:
                pass  # closed while we sent (1009, 1007): the close frame tells why
            while not (sentinel and not open_turn and answers >= expected):
                e = await ws.recv(self.timeout_s)
                kind = e.get("type")
                if kind == "error":
                    answers += 1
                    self._error_shape(case, e.get("error"), e.get("status"))
                elif kind == "pong":
                    if e.get("event_id") == "sentinel":
                        sentinel = True
                    else:
                        answers += 1
                elif kind == "response.created":
                    open_turn = True
                elif kind in TERMINAL:
                    answers += 1
                    open_turn = False
            r.answered += n
        except Closed as c:
            if c.code in CLEAN_CLOSES:
                r.clean_closes += 1
                r.answered += n
                r.codes[f"ws_close_{c.code}"] += 1
            elif c.code is None and case.close_ok:
                r.clean_closes += 1  # reset while still sending a frame over the hard limit
                r.answered += n
                r.codes["ws_reset_oversize"] += 1
            else:
                r._bad(case, n, f"connection dropped (close code {c.code}) after {answers} "
                       f"of {expected} answers")
        except TimeoutError:
            r._bad(case, n, f"no answer within {self.timeout_s:g} s ({answers} of {expected})")
        except (ConnectionError, OSError) as e:
            r._bad(case, n, f"{type(e).__name__}: {e}")
        finally:
            await ws.close()

    def _error_shape(self, case: Case, err: Any, status: Any) -> None:
        if not (isinstance(err, dict) and isinstance(err.get("message"), str) and err["message"]
                and isinstance(err.get("type"), str)):
            self.result._bad(case, 0, f"error without the OpenAI shape: {err!r}"[:200])
            return
        self.result.codes[str(err.get("code") or err["type"])] += 1
        if isinstance(status, int) and status >= 500 and err.get("code") != "server_busy":
            self.result.internal_errors += 1

    # -- HTTP -----------------------------------------------------------------------------------
    async def _http(self, http: aiohttp.ClientSession, case: Case) -> None:
        url = f"http://{self.host}:{self.port}{case.path}"
        headers = {"Content-Type": case.content_type, **self.auth}
        try:
            async with http.request(case.method, url, data=case.body, headers=headers,
                                    timeout=aiohttp.ClientTimeout(total=self.timeout_s)) as resp:
                raw = await resp.read()
            if resp.status == 200:
                self.result.answered += 1
                return
            try:
                body = json.loads(raw)
            except ValueError:
                self.result._bad(case, 1, f"HTTP {resp.status} not in the error shape: "
                                 f"{raw[:120]!r}")
                return
            self._error_shape(case, body.get("error") if isinstance(body, dict) else None,
                              resp.status)
            self.result.answered += 1
        except (aiohttp.ClientError, TimeoutError) as e:
            self.result._bad(case, 1, f"{type(e).__name__}: {e}")

    # -- gRPC -----------------------------------------------------------------------------------
    async def _grpc(self, channel: grpc.aio.Channel, case: Case) -> None:
        meta = tuple((k.lower(), v) for k, v in self.auth.items())
        try:
            if "abort" in case.grpc_fields:
                await pb_grpc.GenerationStub(channel).Abort(
                    pb.AbortRequest(request_id=case.grpc_fields["abort"]), metadata=meta,
                    timeout=self.timeout_s)
            else:
                call = channel.unary_stream(
                    "/turnspec.v1.Generation/Generate",
                    request_serializer=None if case.grpc_bytes is not None
                    else pb.GenerateRequest.SerializeToString,
                    response_deserializer=pb.GenerateResponse.FromString)
                req = case.grpc_bytes if case.grpc_bytes is not None else _proto(case.grpc_fields)
                async for _ in call(req, metadata=meta, timeout=self.timeout_s):
                    pass
            self.result.answered += 1
        except grpc.aio.AioRpcError as e:
            code = e.code()
            if code in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.DEADLINE_EXCEEDED,
                        grpc.StatusCode.UNAVAILABLE):
                self.result._bad(case, 1, f"gRPC {code.name}: {e.details()}"[:200])
                return
            self.result.codes[f"grpc_{code.name}"] += 1
            if code == grpc.StatusCode.INTERNAL and "internal_error" in (e.details() or ""):
                self.result.internal_errors += 1
            self.result.answered += 1


def _proto(f: dict[str, Any]) -> pb.GenerateRequest:
    s = pb.SamplingParams(max_tokens=f.get("max_tokens", 2), stop=f.get("stop", []))
    for k in ("temperature", "top_p"):
        if k in f:
            setattr(s, k, f[k])
    msg = pb.GenerateRequest(messages=[] if f.get("messages") == 0 else [pb.Message(
        role=f.get("role", "user"), content=f.get("content", "Say hi."))], sampling=s)
    if "parameters_json" in f:
        msg.tools.append(pb.Tool(name="t", parameters_json=f["parameters_json"]))
    if "tool_choice" in f:
        msg.tool_choice.mode = f["tool_choice"]
    return msg
