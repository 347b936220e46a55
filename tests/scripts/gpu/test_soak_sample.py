"""scripts/gpu/soak_sample.py: the SGLang soak's sampler (process tree RSS, fds, /metrics) and
its summary after warm-up."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("soak_sample", ROOT / "scripts/gpu/soak_sample.py")
soak_sample = importlib.util.module_from_spec(spec)
spec.loader.exec_module(soak_sample)


def test_tree_rss_and_a_sample_without_a_server() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        pids = soak_sample.tree(os.getpid())
        assert pids[0] == os.getpid() and child.pid in pids
        assert soak_sample.rss_mb([os.getpid()]) > 10
        with socket.socket() as s:  # a port nobody listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        s = soak_sample.sample(os.getpid(), port, time.monotonic())
        assert s["fds"] > 0 and s["rss_mb"] >= soak_sample.rss_mb([os.getpid()])
        assert "metrics_error" in s and "turnspec_engine_used_kv_blocks" not in s
    finally:
        child.stdin.close()
        child.wait(10)


def test_summary_counts_growth_after_warmup(tmp_path: Path) -> None:
    rows = [{"t_s": 0, "gpu_mb": 500, "rss_mb": 900, "fds": 40},
            {"t_s": 130, "gpu_mb": 70000, "rss_mb": 3000, "fds": 60},
            {"t_s": 600, "gpu_mb": 70000, "rss_mb": 3012.5, "fds": 61}]
    path = tmp_path / "soak.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = soak_sample.summary(str(path), warmup_s=120)
    assert out["samples"] == 3 and out["seconds"] == 600
    assert out["gpu_mb"] == {"after_warmup": 70000, "end": 70000, "max": 70000, "growth": 0}
    assert out["rss_mb"]["growth"] == 12.5 and out["fds"]["growth"] == 1
