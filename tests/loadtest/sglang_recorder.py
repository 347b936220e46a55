"""A recording peer for SGLang's native `POST /generate` (SGLang is not installed on CPU
machines): a real HTTP server on 127.0.0.1 that keeps every body it is sent and answers in
SGLang 0.5.17's streaming format (python/sglang/srt/entrypoints/http_server.py
`generate_request`): `data: {"text", "output_ids", "meta_info"}` lines, then `data: [DONE]`;
cumulative text and ids as SGLang's default, or only the new part of each as with
`--incremental-streaming-output`; an error is one `data: {"error": {"message"}}` line."""

from __future__ import annotations

import asyncio
import json
import threading

from aiohttp import web


class GenerateRecorder:
    """A real HTTP server on 127.0.0.1 that records `POST /generate` bodies and streams a short
    answer in SGLang's format; `GET /v1/models` answers the load test's RTT probe."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self.incremental = False  # SGLang's --incremental-streaming-output
        self.pieces: list[tuple[int, str]] = [(4, " Sure"), (7, ","), (9, " one moment.")]
        self.finish = "length"
        self.error: str | None = None  # answer with SGLang's error line instead
        self.final_meta: dict = {}  # more meta_info on the last chunk (timestamps, verify count)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.port = 0

    def start(self) -> GenerateRecorder:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(30)
        return self

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/generate", self._generate)
        app.router.add_get("/v1/models", self._models)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        self.port = self.runner.addresses[0][1]

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "recorder"}]})

    async def _generate(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.bodies.append(body)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        ids, text, n = [], "", len(self.pieces)
        if self.error is not None:
            await resp.write(b"data: " + json.dumps({"error": {"message": self.error}}).encode()
                             + b"\n\n")
        for k, (tok, piece) in enumerate(self.pieces if self.error is None else [], 1):
            ids, text = ids + [tok], text + piece
            meta = {"id": "r", "finish_reason": {"type": self.finish} if k == n else None,
                    "prompt_tokens": len(body["input_ids"]), "completion_tokens": k,
                    "cached_tokens": 0, **(self.final_meta if k == n else {})}
            chunk = ({"text": piece, "output_ids": [tok]} if self.incremental
                     else {"text": text, "output_ids": list(ids)})
            await resp.write(b"data: " + json.dumps({**chunk, "meta_info": meta}).encode()
                             + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        return resp

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
