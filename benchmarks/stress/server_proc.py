"""A `turnspec serve` child process for the campaign: its ports, /metrics, and its RSS and
open file descriptors (psutil), so a crash or a leak shows up as such."""

from __future__ import annotations

import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from typing import IO

import psutil


def _pump(stream: IO[str], out: queue.Queue, log: IO[str] | None) -> None:
    for line in stream:
        out.put(line)
        if log is not None:
            log.write(line)
            log.flush()
    out.put(None)


class ServerProcess:
    def __init__(self, args: list[str], log_path: str | None = None) -> None:
        self.args = args
        self.log = open(log_path, "w") if log_path else None  # noqa: SIM115 (closed in stop)
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0
        self.grpc_port = 0
        self._lines: queue.Queue = queue.Queue()

    def start(self, timeout_s: float = 600.0) -> ServerProcess:
        cmd = [sys.executable, "-m", "turnspec.cli.main", "serve", "--port", "0",
               "--grpc-port", "0", *self.args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
        threading.Thread(target=_pump, args=(self.proc.stdout, self._lines, self.log),
                         daemon=True).start()
        m = self._wait(r"listening on http://[\d.]+:(\d+) .* gRPC [\d.]+:(\d+)", timeout_s)
        self.port, self.grpc_port = int(m.group(1)), int(m.group(2))
        self._wait(r"turnspec: ready", timeout_s)
        return self

    def _wait(self, pattern: str, timeout_s: float) -> re.Match:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=1.0)
            except queue.Empty:
                continue
            if line is None:
                raise RuntimeError(f"turnspec serve exited before {pattern!r}")
            if m := re.search(pattern, line):
                return m
        raise TimeoutError(f"turnspec serve: no line matching {pattern!r} in {timeout_s:g} s")

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def metrics_text(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as r:
            return r.read().decode()

    def metrics(self) -> dict[str, float]:
        """/metrics as {name: value} for the unlabelled series (gauges and totals)."""
        out = {}
        for line in self.metrics_text().splitlines():
            if line and not line.startswith("#") and "{" not in line:
                name, _, value = line.partition(" ")
                out[name] = float(value)
        return out

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=10) as r:
                return r.status == 200
        except OSError:
            return False

    def wait_idle(self, timeout_s: float = 60.0) -> tuple[float, dict[str, float]]:
        """Seconds until the engine holds no sequence and no KV block (and the metrics then)."""
        t0 = time.perf_counter()
        while True:
            m = self.metrics()
            if (m.get("turnspec_engine_active_sequences") == 0
                    and m.get("turnspec_engine_waiting_sequences") == 0
                    and m.get("turnspec_engine_used_kv_blocks") == 0) \
                    or time.perf_counter() - t0 > timeout_s:
                return time.perf_counter() - t0, m
            time.sleep(0.01)

    def rss_mb(self) -> float:
        assert self.proc is not None
        return psutil.Process(self.proc.pid).memory_info().rss / 2**20

    def open_fds(self) -> int:
        assert self.proc is not None
        return psutil.Process(self.proc.pid).num_fds()

    def stop(self, timeout_s: float = 60.0) -> int | None:
        """SIGTERM (the drain path), then the exit code."""
        code = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                code = self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                code = self.proc.wait(10)
        elif self.proc is not None:
            code = self.proc.returncode
        if self.log is not None:
            self.log.close()
        return code
