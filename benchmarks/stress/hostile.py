"""Seeded hostile messages for the fuzzer, one `Case` per connection (or HTTP request, or
gRPC call): truncated JSON, wrong types, huge strings, deep nesting, binary frames, invalid
UTF-8, unknown and out-of-order events, cancels of unknown ids, protocol garbage, and floods
on one connection. `fuzz.py` sends them and judges the answers."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from turnspec.benchmarks.stress.rawws import BINARY, TEXT

VALID_CREATE = {"type": "response.create", "input": "Say hi.", "max_output_tokens": 2,
                "temperature": 0.0}
VALID_CHAT = {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 2,
              "stream": True}
FIELDS = ("input", "instructions", "tools", "tool_choice", "temperature", "top_p",
          "max_output_tokens", "previous_response_id", "metadata", "spec_block_size",
          "generate", "model", "response")
CHAT_FIELDS = ("messages", "tools", "tool_choice", "temperature", "top_p", "top_k", "seed",
               "max_tokens", "stop", "n", "stream", "stream_options", "request_id")


@dataclass(slots=True)
class Frame:
    payload: bytes
    opcode: int = TEXT
    silent: bool = False  # answered by design with nothing (response.cancel): judged by a ping
    raw: bool = False  # bytes written as they are (protocol garbage), not framed


@dataclass(slots=True)
class Case:
    transport: str  # "ws" | "http" | "grpc"
    kind: str
    frames: list[Frame] = field(default_factory=list)  # ws
    method: str = "POST"  # http
    path: str = "/v1/chat/completions"
    body: bytes = b""
    content_type: str = "application/json"
    grpc_bytes: bytes | None = None  # grpc: raw request bytes (None: `grpc_fields`)
    grpc_fields: dict = field(default_factory=dict)
    # the expected answer is a close: invalid UTF-8 (1007), protocol errors (1002), a frame
    # over the hard limit (1009; the server closes while the client still sends, so the
    # client may see a reset instead of the close frame)
    close_ok: bool = False

    @property
    def messages(self) -> int:
        return max(1, len(self.frames))


def _random_value(rng: random.Random, limit: int, depth: int = 0) -> object:
    k = rng.randrange(9 if depth < 3 else 6)
    if k == 6:
        return [_random_value(rng, limit, depth + 1) for _ in range(rng.randrange(4))]
    if k == 7:
        return {str(rng.random()): _random_value(rng, limit, depth + 1)
                for _ in range(rng.randrange(4))}
    if k == 8:
        return float("nan")
    return (None, True, rng.randint(-2**70, 2**70), rng.uniform(-1e9, 1e9), "",
            "".join(chr(rng.randrange(0x20, 0x2FFF)) for _ in range(rng.randrange(30))))[k]


def _nested(rng: random.Random, depth: int) -> str:
    if rng.random() < 0.5:
        return '{"type":"response.create","input":' + "[" * depth + "]" * depth + "}"
    return '{"a":' * depth + "1" + "}" * depth


def ws_case(rng: random.Random, limit: int) -> Case:
    kind = rng.choice(("truncated", "wrong_type", "huge", "nested", "binary", "utf8",
                       "unknown", "out_of_order", "cancel_unknown", "flood", "garbage",
                       "valid"))
    c = Case("ws", kind)
    text = json.dumps(VALID_CREATE)
    if kind == "truncated":
        c.frames = [Frame(text[:rng.randrange(len(text))].encode())]
    elif kind == "wrong_type":
        body = dict(VALID_CREATE)
        body[rng.choice(FIELDS)] = _random_value(rng, limit)
        c.frames = [Frame(json.dumps(body, allow_nan=True).encode())]
    elif kind == "huge":  # over the soft limit: 413; over 4x: aiohttp closes with 1009
        n = rng.choice((limit + rng.randrange(1, limit), 4 * limit + rng.randrange(1, limit)))
        c.frames = [Frame(json.dumps({**VALID_CREATE, "input": "x" * n}).encode())]
        c.close_ok = n > 4 * limit - 100
    elif kind == "nested":
        c.frames = [Frame(_nested(rng, rng.choice((100, 5_000, 50_000))).encode())]
        c.close_ok = len(c.frames[0].payload) > 4 * limit
    elif kind == "binary":
        c.frames = [Frame(rng.randbytes(rng.randrange(1, 2048)), BINARY)]
    elif kind == "utf8":  # invalid UTF-8 in a text frame: the server closes with 1007
        c.frames = [Frame(b'{"type":"ping","x":"\xff\xfe\xc3\x28"}')]
        c.close_ok = True
    elif kind == "unknown":
        c.frames = [Frame(json.dumps({"type": rng.choice(
            ("session.update", "response.delete", "conversation.item.create", "", 5, None,
             "x" * 300))}).encode())]
    elif kind == "out_of_order":
        c.frames = [rng.choice((
            Frame(json.dumps({**VALID_CREATE, "previous_response_id": "resp_nope"}).encode()),
            Frame(json.dumps({**VALID_CREATE, "input": [{"type": "function_call_output",
                                                         "call_id": "call_x",
                                                         "output": "{}"}]}).encode()),
            Frame(json.dumps({"type": "response.cancel"}).encode(), silent=True)))]
    elif kind == "cancel_unknown":
        c.frames = [Frame(json.dumps({"type": "response.cancel",
                                      "response_id": f"resp_{rng.getrandbits(64):x}"}).encode(),
                          silent=True)]
    elif kind == "flood":  # back-to-back on one connection, read afterwards
        pool = [Frame(b'{"type":"ping"}'), Frame(b'{"type":"nope"}'), Frame(b"{"),
                Frame(json.dumps(VALID_CREATE).encode()),
                Frame(b'{"type":"response.cancel"}', silent=True)]
        c.frames = [rng.choice(pool) for _ in range(rng.randrange(50, 200))]
    elif kind == "garbage":  # protocol errors: reserved opcode, unmasked, orphan continuation
        c.frames = [rng.choice((Frame(b"\x83\x80abcd", raw=True),
                                Frame(b"\x81\x05hello", raw=True),
                                Frame(b"\x80\x80abcd", raw=True)))]
        c.close_ok = True
    else:
        c.frames = [Frame(text.encode())]
    return c


def http_case(rng: random.Random, limit: int) -> Case:
    kind = rng.choice(("truncated", "wrong_type", "huge", "nested", "utf8", "content_type",
                       "empty", "unknown_path", "method", "valid"))
    c = Case("http", kind)
    text = json.dumps(VALID_CHAT)
    if kind == "truncated":
        c.body = text[:rng.randrange(len(text))].encode()
    elif kind == "wrong_type":
        body = dict(VALID_CHAT)
        body[rng.choice(CHAT_FIELDS)] = _random_value(rng, limit)
        c.body = json.dumps(body, allow_nan=True).encode()
    elif kind == "huge":
        c.body = json.dumps({**VALID_CHAT, "messages": [
            {"role": "user", "content": "x" * (limit + rng.randrange(1, limit))}]}).encode()
    elif kind == "nested":
        c.body = _nested(rng, rng.choice((100, 5_000, 50_000))).encode()
    elif kind == "utf8":
        c.body = b'{"messages":[{"role":"user","content":"\xff\xfe"}]}'
    elif kind == "content_type":
        c.body, c.content_type = text.encode(), "text/plain"
    elif kind == "empty":
        c.body = b""
    elif kind == "unknown_path":
        c.path = rng.choice(("/v1/completions", "/v1/responses/x", "/admin", "/v1/chat"))
    elif kind == "method":
        c.method = rng.choice(("PUT", "DELETE", "PATCH"))
    else:
        c.body = text.encode()
    return c


def grpc_case(rng: random.Random, limit: int) -> Case:
    kind = rng.choice(("bad_proto", "empty", "wrong_value", "huge", "abort_unknown",
                       "valid"))
    c = Case("grpc", kind)
    if kind == "bad_proto":
        c.grpc_bytes = rng.randbytes(rng.randrange(1, 512))
    elif kind == "empty":
        c.grpc_bytes = b""
    elif kind == "wrong_value":
        c.grpc_fields = rng.choice((
            {"temperature": float("nan")}, {"temperature": 7.0}, {"top_p": 0.0},
            {"max_tokens": 0}, {"role": "wizard"}, {"parameters_json": "{" * 20},
            {"parameters_json": "[" * 50_000 + "]" * 50_000}, {"stop": [""]},
            {"tool_choice": "sometimes"}, {"messages": 0}))
    elif kind == "huge":
        c.grpc_fields = {"content": "x" * (limit + rng.randrange(1, limit))}
    elif kind == "abort_unknown":
        c.grpc_fields = {"abort": f"req_{rng.getrandbits(64):x}"}
    return c


def cases(n_messages: int, seed: int, limit: int,
          mix: tuple[float, float, float] = (0.6, 0.25, 0.15)) -> list[Case]:
    """Cases until they hold `n_messages` messages, transports drawn by `mix` (ws, http,
    grpc)."""
    rng = random.Random(seed)
    out: list[Case] = []
    total = 0
    while total < n_messages:
        r = rng.random()
        make = ws_case if r < mix[0] else http_case if r < mix[0] + mix[1] else grpc_case
        c = make(rng, limit)
        out.append(c)
        total += c.messages
    return out
