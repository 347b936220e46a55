"""`turnspec serve` as a real process: prints where it listens, health NOT_SERVING -> SERVING
across warm-up, API key from the environment, one info log line per request, and a SIGTERM
drain (in-flight stream finishes, new requests refused, clean exit)."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from turnspec.benchmarks.otlp_sink import OtlpSink
from turnspec.loadtest.clients import ResponsesSocketClient

KEY = "cli-test-key"
# The serve subcommand through its own register()/run(), as the `turnspec` entry point does.
CHILD = """
import argparse, logging, sys
from turnspec.cli import serve
p = argparse.ArgumentParser(prog="turnspec")
serve.register(p.add_subparsers(dest="command", required=True))
a = p.parse_args(sys.argv[1:])
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
sys.exit(a.func(a))
"""


def _lines(stream, out: queue.Queue) -> None:
    for line in stream:
        out.put(line)
    out.put(None)


def _wait_line(q: queue.Queue, pattern: str, seen: list[str], timeout: float = 300) -> re.Match:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = q.get(timeout=1)
        except queue.Empty:
            continue
        if line is None:
            raise AssertionError("serve exited early:\n" + "".join(seen))
        seen.append(line)
        m = re.search(pattern, line)
        if m:
            return m
    raise AssertionError(f"no line matching {pattern!r}:\n" + "".join(seen))


def _health(port: int) -> int:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        return health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(),
                                                    timeout=10).status


def _http(port: int, path: str, body: bytes | None = None) -> int:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body,
                                 headers={"Authorization": f"Bearer {KEY}",
                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


@pytest.fixture
def serve_proc(smollm2_dir):
    env = {**os.environ, "TURNSPEC_API_KEY": KEY}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, "serve", "--port", "0", "--grpc-port", "0", "--model",
         str(smollm2_dir), "--speculator", "none", "--max-context", "1024",
         "--drain-seconds", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    out: queue.Queue = queue.Queue()
    threading.Thread(target=_lines, args=(proc.stdout, out), daemon=True).start()
    yield proc, out
    if proc.poll() is None:
        proc.kill()
        proc.wait(30)


async def test_serve_lifecycle(serve_proc):
    proc, out = serve_proc
    seen: list[str] = []
    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    _wait_line(out, rf"turnspec: event loop {loop}$", seen)  # --event-loop auto
    m = _wait_line(out, r"listening on http://127\.0\.0\.1:(\d+) .* gRPC 127\.0\.0\.1:(\d+)",
                   seen)
    port, grpc_port = int(m.group(1)), int(m.group(2))
    assert _health(grpc_port) == health_pb2.HealthCheckResponse.NOT_SERVING  # still loading
    _wait_line(out, r"WebSocket ws://127\.0\.0\.1:\d+/v1/responses", seen)
    _wait_line(out, r"turnspec: ready", seen)
    assert _health(grpc_port) == health_pb2.HealthCheckResponse.SERVING
    assert _http(port, "/health") == 200
    assert _http(port, "/v1/models") == 200  # the key from TURNSPEC_API_KEY is accepted

    ws = await ResponsesSocketClient(f"ws://127.0.0.1:{port}/v1/responses",
                                     api_key=KEY).connect()
    try:
        await ws.send({"type": "response.create", "input": "Write a long story.",
                       "max_output_tokens": 12})
        while (await ws.recv())["type"] != "response.output_text.delta":
            pass
        proc.send_signal(signal.SIGTERM)  # mid-stream
        for _ in range(400):
            if _http(port, "/health") == 503:
                break
            await asyncio.sleep(0.05)
        assert _http(port, "/health") == 503
        assert _http(port, "/v1/chat/completions",
                     b'{"messages":[{"role":"user","content":"hi"}]}') == 503
        while True:
            e = await ws.recv()
            if e["type"].startswith("response.") and "response" in e and \
                    e["type"] != "response.created":
                break
        assert e["type"] == "response.incomplete"  # ran to max_output_tokens, not aborted
        assert e["response"]["usage"]["output_tokens"] == 12
    finally:
        await ws.close()
    assert await asyncio.to_thread(proc.wait, 60) == 0
    while (line := out.get(timeout=10)) is not None:
        seen.append(line)
    log = "".join(seen)
    assert re.search(r"INFO turnspec\.server: ws req_\w+ length prompt=\d+", log), log
    assert re.search(r"INFO turnspec\.server: http rejected 503 server_shutting_down", log), log


async def test_serve_exports_a_ws_turn_over_otlp_and_serves_metrics(smollm2_dir):
    """The contract: `--otlp-endpoint http://HOST:PORT` exports OTLP/gRPC; a WS turn whose
    upgrade carries `traceparent` yields >= 3 server spans in that trace; /metrics has a
    time_to_first_token metric."""
    collector = OtlpSink()
    trace_id = "5bf92f3577b34da6a3ce929d0e0e4737"
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, "serve", "--port", "0", "--grpc-port", "-1", "--model",
         str(smollm2_dir), "--speculator", "none", "--max-context", "1024",
         "--otlp-endpoint", f"http://127.0.0.1:{collector.port}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out: queue.Queue = queue.Queue()
    threading.Thread(target=_lines, args=(proc.stdout, out), daemon=True).start()
    seen: list[str] = []
    try:
        port = int(_wait_line(out, r"listening on http://127\.0\.0\.1:(\d+)", seen).group(1))
        _wait_line(out, r"turnspec: ready", seen)
        ws = await ResponsesSocketClient(
            f"ws://127.0.0.1:{port}/v1/responses",
            headers={"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"}).connect()
        try:
            rec = await ws.create("Say hello.", max_output_tokens=8)
        finally:
            await ws.close()
        assert rec.ok and rec.timing["trace_id"] == trace_id
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            assert "time_to_first_token" in r.read().decode()
        proc.send_signal(signal.SIGTERM)  # shutdown flushes the batch of spans
        assert await asyncio.to_thread(proc.wait, 60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        collector.stop()
    ours = [s for s in collector.spans if s.trace_id.hex() == trace_id]
    assert len(ours) >= 3, [s.name for s in collector.spans]
    assert {"turnspec.engine.prefill", "turnspec.engine.decode"} <= {s.name for s in ours}
    while (line := out.get(timeout=10)) is not None:
        seen.append(line)
    assert re.search(rf"ws req_\w+ \w+ prompt=.* trace_id={trace_id}", "".join(seen))


@pytest.mark.skipif(__import__("importlib").util.find_spec("sglang") is not None,
                    reason="sglang installed")
def test_serve_engine_sglang_without_sglang_fails_fast_with_a_hint(smollm2_dir, capsys):
    from turnspec.cli.main import main

    code = main(["serve", "--engine", "sglang", "--model", str(smollm2_dir), "--port", "0"])
    assert code == 2  # before any port is bound or engine built
    err = capsys.readouterr().err
    assert "needs the sglang package" in err and "scripts/gpu/README.md" in err


def test_serve_refuses_the_other_engines_flags(smollm2_dir, capsys):
    """A flag the chosen engine would not read is refused before anything loads, not ignored:
    the local engine's under --engine sglang (SGLang's DFLASH has no lookup, no branches),
    SGLang's under the local engine."""
    from turnspec.cli.main import main

    code = main(["serve", "--engine", "sglang", "--model", str(smollm2_dir), "--port", "0",
                 "--spec-branches", "3", "--spec-lookup", "off", "--speculator", "default"])
    assert code == 2
    assert ("serve --engine sglang: --spec-lookup, --spec-branches apply to the local engine "
            "only") in capsys.readouterr().err
    code = main(["serve", "--model", str(smollm2_dir), "--port", "0",
                 "--sglang-mem-fraction", "0.5"])
    assert code == 2
    assert "serve --engine local: --sglang-mem-fraction apply to --engine sglang only" \
        in capsys.readouterr().err


def test_serve_refuses_a_bad_tools_preload_file(smollm2_dir, tmp_path, capsys):
    """--tools-preload is read and checked before anything loads; the error names the line."""
    from turnspec.cli.main import main

    path = tmp_path / "tools.jsonl"
    path.write_text('[{"type": "function", "name": "ok_tool"}]\n{"tools": "lookup"}\n')
    code = main(["serve", "--model", str(smollm2_dir), "--port", "0", "--tools-preload",
                 str(path)])
    assert code == 2
    assert f"--tools-preload {path}:2: tools: expected an array of tools, got str" \
        in capsys.readouterr().err


def test_event_loop_choices(monkeypatch):
    from turnspec.cli.serve import event_loop_factory

    name, new_loop = event_loop_factory("asyncio")
    loop = new_loop()
    try:
        assert name == "asyncio" and type(loop).__module__.startswith("asyncio")
    finally:
        loop.close()
    with pytest.raises(ValueError, match="expected one of auto, uvloop, asyncio"):
        event_loop_factory("trio")
    monkeypatch.setitem(sys.modules, "uvloop", None)  # as if not installed: import fails
    assert event_loop_factory("auto")[0] == "asyncio"
    with pytest.raises(ValueError, match="uvloop is not installed"):
        event_loop_factory("uvloop")
