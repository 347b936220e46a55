"""Overload at a multiple of capacity. First the refusals: every running slot and the whole
admission queue are filled with long turns, and probes on each transport time how fast a
refusal comes back (the issue's bound: 5 ms). Then `turnspec loadtest`: a closed-loop
calibration at the running limit gives the capacity in turns/s, and an open-loop run offers
`factor` times that while /metrics is sampled for the admission queue and the RSS. Admitted
turns' TTFT comes from the load test (refusals count only as its errors)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import grpc

from turnspec.benchmarks.stress.rawws import RawSocket
from turnspec.benchmarks.stress.server_proc import ServerProcess
from turnspec.loadtest.stats import percentile
from turnspec.server.proto.turnspec.v1 import generation_pb2 as pb
from turnspec.server.proto.turnspec.v1 import generation_pb2_grpc as pb_grpc

WORKLOAD = "synthetic:64,24"


@dataclass(slots=True)
class OverloadResult:
    capacity_turns_s: float = 0.0
    offered_turns_s: float = 0.0
    loadtest: dict[str, Any] = field(default_factory=dict)  # the summary we report
    reject_ms: dict[str, list[float]] = field(default_factory=dict)  # transport -> latencies
    queued_peak: float = 0.0
    server_reject_p99_ms: dict[str, float | None] = field(default_factory=dict)
    rss_mb: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"capacity_turns_s": round(self.capacity_turns_s, 2),
                "offered_turns_s": round(self.offered_turns_s, 2), "loadtest": self.loadtest,
                "reject_ms": {k: percentiles(v) for k, v in self.reject_ms.items()},
                "reject_ms_all": percentiles([x for v in self.reject_ms.values() for x in v]),
                "server_reject_p99_ms_at_most": self.server_reject_p99_ms,
                "queued_peak": self.queued_peak,
                "rss_mb": {"start": self.rss_mb[0] if self.rss_mb else None,
                           "peak": max(self.rss_mb) if self.rss_mb else None,
                           "end": self.rss_mb[-1] if self.rss_mb else None}}


def percentiles(xs: list[float]) -> dict[str, float | int | None]:
    if not xs:
        return {"n": 0, "p50": None, "p99": None, "max": None}
    return {"n": len(xs), "p50": round(percentile(xs, 50), 3),
            "p99": round(percentile(xs, 99), 3), "max": round(max(xs), 3)}


def server_refusal_p99(metrics_text: str, code: str = "server_busy") -> dict[str, float | None]:
    """Per transport, the upper bound of the `turnspec_refusal_seconds` bucket holding the
    99th percentile of `code` refusals, in ms (the server's own receive -> refusal)."""
    from prometheus_client.parser import text_string_to_metric_families

    buckets: dict[str, list[tuple[float, float]]] = {}
    for fam in text_string_to_metric_families(metrics_text):
        for s in fam.samples:
            if s.name == "turnspec_refusal_seconds_bucket" and s.labels.get("code") == code:
                buckets.setdefault(s.labels["transport"], []).append(
                    (float(s.labels["le"]), s.value))
    out: dict[str, float | None] = {}
    for transport, bs in buckets.items():
        bs.sort()
        total = bs[-1][1]
        out[transport] = next((le * 1000.0 for le, c in bs if c >= 0.99 * total), None) \
            if total else None
    return out


def loadtest(url: str, extra: list[str], out: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "turnspec.cli.main", "loadtest", "--url", url,
           "--workload", WORKLOAD, "--no-progress", "--history", "", "--out", str(out),
           "--max-error-rate", "1", "--no-rtt-probe", *extra]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


async def _probe_http(s: aiohttp.ClientSession, url: str, out: list[float]) -> None:
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
    t0 = time.perf_counter()
    async with s.post(url, json=body) as r:
        await r.read()
        if r.status == 429:
            out.append((time.perf_counter() - t0) * 1000.0)


async def _probe_grpc(stub: pb_grpc.GenerationStub, out: list[float]) -> None:
    req = pb.GenerateRequest(messages=[pb.Message(role="user", content="hi")],
                             sampling=pb.SamplingParams(max_tokens=1))
    t0 = time.perf_counter()
    try:
        async for _ in stub.Generate(req, timeout=60):
            pass
    except grpc.aio.AioRpcError as e:
        if e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
            out.append((time.perf_counter() - t0) * 1000.0)


async def _probe_ws(ws: RawSocket, out: list[float]) -> None:
    t0 = time.perf_counter()
    ws.send_json({"type": "response.create", "input": "hi", "max_output_tokens": 1})
    await ws.drain()
    while True:
        e = await ws.recv(60)
        if e.get("type") == "error":
            if e["error"].get("code") == "server_busy":
                out.append((time.perf_counter() - t0) * 1000.0)
            return
        if e.get("type") in ("response.completed", "response.incomplete", "response.failed"):
            return


async def wait_admission(srv: ServerProcess, running: int, queued: int,
                         timeout_s: float = 120.0) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        m = await asyncio.to_thread(srv.metrics)
        if m.get("turnspec_running_turns") == running and m.get("turnspec_queued_turns") == queued:
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"admission never reached {running} running + {queued} queued")


async def refusals(srv: ServerProcess, running: int, queue: int, n: int,
                   result: OverloadResult) -> None:
    """Fill every running slot and the whole queue with long WS turns, then time `n` refusals
    per transport (each probe waits for its answer before the next), then cancel the turns."""
    holders = [await RawSocket.connect("127.0.0.1", srv.port) for _ in range(running + queue)]
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{srv.grpc_port}")
    try:
        for ws in holders:
            ws.send_json({"type": "response.create", "input": "Tell me a very long story.",
                          "max_output_tokens": 2000})
            await ws.drain()
            await asyncio.sleep(0.02)  # keep the holders' arrival order (FIFO queue)
        await wait_admission(srv, running, queue)
        stub = pb_grpc.GenerationStub(channel)
        probe_ws = await RawSocket.connect("127.0.0.1", srv.port)
        url = f"http://127.0.0.1:{srv.port}/v1/chat/completions"
        lat: dict[str, list[float]] = {"http": [], "grpc": [], "ws": []}
        async with aiohttp.ClientSession() as s:
            for _ in range(n):
                await _probe_http(s, url, lat["http"])
                await _probe_grpc(stub, lat["grpc"])
                await _probe_ws(probe_ws, lat["ws"])
        await probe_ws.close()
        result.reject_ms = lat
        result.server_reject_p99_ms = server_refusal_p99(srv.metrics_text())
    finally:
        for ws in holders:
            ws.abort()  # drops the long turns (their KV comes back)
        await channel.close()


async def sample(srv: ServerProcess, stop: asyncio.Event, result: OverloadResult) -> None:
    """The admission queue's peak and the RSS while the load test runs."""
    while not stop.is_set():
        m = await asyncio.to_thread(srv.metrics)
        result.queued_peak = max(result.queued_peak, m.get("turnspec_queued_turns", 0))
        result.rss_mb.append(round(srv.rss_mb(), 1))
        await asyncio.sleep(0.1)


async def run_overload(srv: ServerProcess, *, running: int, queue: int, factor: float,
                       seconds: float, slo_ttft_ms: float, probes: int = 300,
                       transport_url: str | None = None) -> OverloadResult:
    result = OverloadResult()
    url = transport_url or f"ws://127.0.0.1:{srv.port}/v1/responses"
    await refusals(srv, running, queue, probes, result)
    srv.wait_idle(60.0)
    with tempfile.TemporaryDirectory() as tmp:
        calib = await asyncio.to_thread(loadtest, url, [
            "--concurrency", str(running), "--duration", str(max(10.0, seconds / 3)),
            "--warmup", str(running)], Path(tmp) / "calib.json")
        result.capacity_turns_s = calib["throughput"]["requests_per_s"] or 0.0
        result.offered_turns_s = factor * result.capacity_turns_s
        stop = asyncio.Event()
        prober = asyncio.create_task(sample(srv, stop, result))
        try:
            res = await asyncio.to_thread(loadtest, url, [
                "--rate", f"{result.offered_turns_s:.3f}", "--duration", str(seconds),
                "--slo", f"ttft:{slo_ttft_ms:g}", "--seed", "3"], Path(tmp) / "over.json")
        finally:
            stop.set()
            await prober
    m = res["metrics"]
    result.loadtest = {
        "turns": res["requests"]["ok"] + res["requests"]["errors"],
        "served": res["requests"]["ok"], "refused": res["requests"]["errors"],
        "errors_by_type": res["requests"]["errors_by_type"],
        "ttft_ms": {k: m["ttft_ms"][k] for k in ("p50", "p90", "p99")},
        "slo_ttft_ms": slo_ttft_ms, "goodput": res.get("goodput"),
        "client_bound": (res.get("saturation") or {}).get("client_bound")}
    return result
