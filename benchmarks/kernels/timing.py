"""GPU timing for the kernel benchmarks: the two ceilings (copy bandwidth, matmul rate) measured
on the device, eager and CUDA-graph timings, and the table/JSON output.

`triton.testing.do_bench` times with CUDA events, flushes L2 before every timed call and we ask
it for the median. Eager numbers include whatever host launch overhead the GPU could not hide;
graph numbers replay N calls captured back to back, i.e. device time without launch gaps (what a
CUDA-graphed engine step sees).
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
import triton
from triton.testing import do_bench


def require_cuda(prog: str) -> None:
    """Exit with a clear message where no real GPU numbers can be produced."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        sys.exit(f"{prog}: TRITON_INTERPRET=1 is set; the interpreter's timings mean nothing. "
                 "Unset it and run on a CUDA GPU.")
    if not torch.cuda.is_available():
        sys.exit(f"{prog}: needs a CUDA GPU (torch.cuda.is_available() is False); "
                 "this benchmark produces no numbers on CPU.")


def median_ms(fn: Callable[[], object], warmup_ms: int = 25, rep_ms: int = 100) -> float:
    return float(do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median"))


def graph_ms(fn: Callable[[], object], calls: int = 1) -> float:
    """Median time of one `fn()` from a CUDA graph of `fn` captured `calls` times back to back
    (give `fn` different inputs per call, e.g. rotating buffers, so the graph does not replay
    out of L2). Returns NaN when `fn` cannot be captured (it syncs or allocates on the host)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            for _ in range(calls):
                fn()
    except RuntimeError as err:  # e.g. "operation not permitted when stream is capturing"
        print(f"  (graph capture failed: {str(err).splitlines()[0][:100]})", file=sys.stderr)
        torch.cuda.synchronize()
        return math.nan
    return median_ms(graph.replay) / calls


def copy_bandwidth_gbs(nbytes: int = 2 << 30) -> float:
    """Device-to-device copy of random bytes; counts bytes read plus bytes written."""
    src = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = median_ms(lambda: dst.copy_(src), warmup_ms=50, rep_ms=300)
    return 2 * nbytes / (ms * 1e-3) / 1e9


def matmul_tflops(dtype: torch.dtype = torch.bfloat16, n: int = 8192) -> float:
    """Dense n x n x n product on random data through torch (cuBLAS)."""
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    ms = median_ms(lambda: a @ b, warmup_ms=50, rep_ms=300)
    return 2 * n ** 3 / (ms * 1e-3) / 1e12


def device_meta() -> dict:
    props = torch.cuda.get_device_properties(0)
    return {"device": props.name, "sms": props.multi_processor_count,
            "l2_mib": getattr(props, "L2_cache_size", 0) / 2**20,
            "torch": torch.__version__, "triton": triton.__version__,
            "cuda": torch.version.cuda, "host": platform.node()}


def print_table(rows: Sequence[dict], columns: Sequence[tuple[str, str, str]]) -> None:
    """columns: (key, header, format spec such as '.1f'); NaN and None print as '-'."""
    def cell(val: object, spec: str) -> str:
        bad = val is None or (isinstance(val, float) and math.isnan(val))
        return "-" if bad else format(val, spec)
    cells = [[cell(row.get(key), spec) for key, _, spec in columns] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, (_, h, _) in enumerate(columns)]
    print("  ".join(h.rjust(w) for (_, h, _), w in zip(columns, widths, strict=True)))
    for r in cells:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)))


def write_json(path: Path | None, meta: dict, rows: Sequence[dict]) -> None:
    if path is None:
        return
    clean = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
             for r in rows]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"meta": meta, "rows": clean}, indent=1))
    print(f"wrote {path}")
