"""scripts/gpu/trace_steps.py on a small trace of the shape SGLang's profiler writes: a step's
launches and graph launches are counted inside its `run_batch`, its GPU time is that of the
device work those calls launched (by correlation), and the plugin's host time is summed."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("trace_steps", ROOT / "scripts/gpu/trace_steps.py")
ts = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ts)


def x(cat: str, name: str, t: float, dur: float, corr: int | None = None) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": t, "dur": dur,
            **({"args": {"correlation": corr}} if corr is not None else {})}


def test_steps_count_their_own_launches_and_the_gpu_time_they_caused(tmp_path: Path) -> None:
    evs = [x("python_function", "scheduler.py(1): run_batch", 0, 1000),
           x("python_function", "turnspec/engine/sglang_plugin/trees.py(9): plan", 100, 300),
           x("cuda_runtime", "cudaLaunchKernel", 150, 5, corr=1),
           x("cuda_runtime", "cudaGraphLaunch", 500, 5, corr=2),
           x("cuda_runtime", "cudaMemcpyAsync", 600, 5, corr=3),
           x("kernel", "_tree_plan_kernel", 900, 40, corr=1),         # ran after the call
           x("kernel", "nvjet_gemm", 950, 200, corr=2),               # past the step's end
           x("gpu_memcpy", "Memcpy DtoD", 980, 10, corr=3),
           x("python_function", "scheduler.py(1): run_batch", 2000, 500),
           x("cuda_runtime", "cudaLaunchKernel", 2100, 5, corr=4),
           x("kernel", "_tree_plan_kernel", 2200, 30, corr=4)]
    path = tmp_path / "t.trace.json.gz"
    with gzip.open(path, "wt") as fh:
        json.dump({"traceEvents": evs}, fh)
    rows = ts.steps(ts.events(path))
    assert [(r["launches"], r["graphs"], r["copies"]) for r in rows] == [(1, 1, 1), (1, 0, 0)]
    assert [round(r["gpu_ms"], 3) for r in rows] == [0.25, 0.03]
    assert ts.host_time(ts.events(path)) == [
        ("turnspec/engine/sglang_plugin/trees.py(9): plan", 0.3, 1)]
    assert ts.kernels(ts.events(path))[0] == ("nvjet_gemm", 0.2, 1)
