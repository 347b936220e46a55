"""SGLang's native `POST /generate`, streamed, as a load-test target on token ids.

    {"input_ids": [...], "sampling_params": {...}, "stream": true}
    -> "data: {"text", "output_ids", "meta_info"}" lines, then "data: [DONE]"

(SGLang 0.5.17, `python/sglang/srt/entrypoints/http_server.py` `generate_request`; an error is
a `data: {"error": {"message"}}` line.) With SGLang's default `incremental_streaming_output`
off, `text` and `output_ids` are cumulative (and `text` may be null until the end); with it on,
each chunk carries only what is new. `meta_info.completion_tokens` (the count so far) tells
which. The text runs through turnspec's own stream parser (tools_grammar) with the turn's
tools when turnspec's server would parse it, so content chunks, TTFT and `tool_call_ms` are
counted as turnspec's transports count them (a call's tag and name are no content chunk).

With the server's `--enable-metrics`, the last chunk's meta_info becomes the record's timing
block as turnspec's server reports its own (`sglang_block`): queue, prefill and decode from the
scheduler's timestamps (as turnspec's SGLang engine reads them, engine/sglang_meta.py; the test
holds the two equal), server E2E from SGLang's receipt of the request to its finish (its HTTP
parse and last send left out), and τ from its verify count, so the load test splits the peer's
latency into the same parts.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from turnspec.loadtest.record import RequestRecord
from turnspec.loadtest.wire import INCOMPLETE, auth_headers, ms_since, net_rtt_ms
from turnspec.tools_grammar.parser import (
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallDone,
    ToolCallStarted,
    ToolCallStreamParser,
)


def sampling_params(*, max_tokens: int, temperature: float | None,
                    structural_tag: str | None) -> dict[str, Any]:
    """What turnspec's SGLang engine sends SGLang for a turn with these settings and the
    server's defaults (engine/sglang.py `sampling_params`; the test holds the two equal)."""
    params: dict[str, Any] = {
        "temperature": 0.0 if temperature is None else temperature, "top_p": 1.0,
        "top_k": -1, "max_new_tokens": max_tokens, "stop": [], "ignore_eos": False,
        "stop_token_ids": [], "skip_special_tokens": True}
    if structural_tag is not None:
        params["structural_tag"] = structural_tag
    return params


class GenerateClient:
    def __init__(self, url: str, api_key: str | None = None, max_connections: int = 256) -> None:
        parts = urlsplit(url)
        self.root = f"{parts.scheme}://{parts.netloc}"
        self._headers = auth_headers(api_key)
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=max_connections),
            timeout=aiohttp.ClientTimeout(total=None))

    async def probe_rtt(self) -> float | None:
        """A keep-alive `GET /v1/models` on the same pool (SGLang answers it at once)."""
        t0 = time.perf_counter()
        try:
            async with self._session.get(self.root + "/v1/models", headers=self._headers) as r:
                await r.read()
        except (aiohttp.ClientError, OSError):
            return None
        return net_rtt_ms(ms_since(t0), None)

    async def generate(self, input_ids: list[int], params: dict[str, Any], *,
                       parser: ToolCallStreamParser | None = None,
                       cancel_after_chunks: int | None = None) -> RequestRecord:
        body = {"input_ids": input_ids, "sampling_params": params, "stream": True}
        rec, stream = RequestRecord("generate"), _Stream(parser)
        rec.begin()
        try:
            async with self._session.post(self.root + "/generate", json=body,
                                          headers=self._headers) as resp:
                if resp.status != 200:
                    return rec.fail({"status": resp.status,
                                     "message": (await resp.text())[:300]})
                async for raw in resp.content:
                    line = raw.strip()
                    if line == b"data: [DONE]":
                        rec.terminal()
                        continue
                    if not line.startswith(b"data: "):
                        continue
                    chunk = json.loads(line[6:])
                    if "error" in chunk:
                        err = chunk["error"]
                        return rec.fail(err if isinstance(err, dict) else {"message": str(err)})
                    stream.on_chunk(rec, chunk)
                    if cancel_after_chunks is not None and len(rec.chunk_ms) >= cancel_after_chunks:
                        rec.cancel_sent()  # barge-in: hang up; SGLang aborts the request
                        resp.close()
                        rec.finish_reason = "cancelled"
                        break
        except (aiohttp.ClientError, OSError) as e:
            return rec.fail({"code": "connection_error", "message": str(e) or type(e).__name__})
        except ValueError as e:
            return rec.fail({"code": "bad_stream", "message": f"unparsable chunk: {e}"})
        if rec.finish_reason is None:
            return rec.fail(dict(INCOMPLETE))
        stream.finish(rec)
        return rec.end(True)

    async def close(self) -> None:
        await self._session.close()


class _Stream:
    """One response's chunks -> the record's text, tool calls, chunk times and usage."""

    def __init__(self, parser: ToolCallStreamParser | None) -> None:
        self.parser = parser
        self.tokens = 0  # completion tokens seen
        self.text = ""  # text seen
        self.calls: dict[int, dict[str, Any]] = {}

    def on_chunk(self, rec: RequestRecord, chunk: dict[str, Any]) -> None:
        meta = chunk.get("meta_info") or {}
        ids = chunk.get("output_ids") or []
        count = int(meta.get("completion_tokens", self.tokens + len(ids)))
        cumulative = self.tokens > 0 and len(ids) == count  # else: this chunk's new part
        text = chunk.get("text")
        if text:
            delta = text[len(self.text):] if cumulative else text
            self.text += delta
            self._feed(rec, delta)
        self.tokens = max(self.tokens, count)
        fin = meta.get("finish_reason")
        if fin is not None:
            rec.finish_reason = str(fin.get("type") if isinstance(fin, dict) else fin)
            rec.usage = {"prompt_tokens": int(meta.get("prompt_tokens") or 0),
                         "completion_tokens": count,
                         "cached_tokens": int(meta.get("cached_tokens") or 0)}
            rec.turnspec = sglang_block(meta, count)

    def _feed(self, rec: RequestRecord, text: str) -> None:
        if self.parser is None:
            rec.text_chunk(text)
            return
        for ev in self.parser.feed(text):
            self._event(rec, ev)

    def _event(self, rec: RequestRecord, ev: Any) -> None:
        if isinstance(ev, TextDelta):
            rec.text_chunk(ev.text)
        elif isinstance(ev, ToolCallStarted):
            self.calls[ev.index] = {"call_id": ev.call_id, "name": ev.name, "arguments": ""}
        elif isinstance(ev, ToolCallArgumentsDelta):
            rec.chunk()
            self.calls[ev.index]["arguments"] += ev.delta
        elif isinstance(ev, ToolCallDone):
            self.calls[ev.index]["arguments"] = ev.arguments_json
            rec.tool_done()

    def finish(self, rec: RequestRecord) -> None:
        if self.parser is not None:
            for ev in self.parser.finish():
                self._event(rec, ev)
        rec.tool_calls = list(self.calls.values())


def sglang_block(meta: dict[str, Any], completion_tokens: int) -> dict[str, Any]:
    """A last chunk's meta_info as turnspec's completion block: `timing` where SGLang sent its
    timestamps (`--enable-metrics`), `spec` where it counted verify steps ({} for neither)."""
    block: dict[str, Any] = {}
    entry, prefilled = meta.get("forward_entry_time"), meta.get("prefill_finished_time")
    received, finished = meta.get("request_received_ts"), meta.get("request_finished_ts")
    if entry and prefilled and received and finished:
        block["timing"] = {
            "server_received_unix_ms": round(received * 1000.0, 3),
            "server_e2e_ms": round((finished - received) * 1000.0, 3),
            "queue_ms": round(max(float(meta.get("queue_time") or 0.0) * 1000.0, 0.0), 3),
            "prefill_ms": round(max((prefilled - entry) * 1000.0, 0.0), 3),
            "decode_ms": round(max((finished - prefilled) * 1000.0, 0.0), 3),
            "prompt_tokens": int(meta.get("prompt_tokens") or 0),
            "cached_tokens": int(meta.get("cached_tokens") or 0),
            "completion_tokens": completion_tokens,
            # the same two spans turnspec's engine reports: its API process's receipt to the
            # scheduler queue (all of this server's host overhead), and the first token's way
            # back from the prefill mark to its API process's first yield
            "engine_in_ms": round((entry - float(meta.get("queue_time") or 0.0) - received)
                                  * 1000.0, 3),
            "first_back_ms": (round((meta["response_sent_to_client_ts"] - prefilled) * 1000.0, 3)
                              if meta.get("response_sent_to_client_ts") else None)}
    steps = int(meta.get("spec_verify_ct") or 0)
    if steps:
        block["spec"] = {"verify_steps": steps, "committed_tokens": completion_tokens,
                         "tau": completion_tokens / steps}
    return block
