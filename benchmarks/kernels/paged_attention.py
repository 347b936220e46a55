"""Benchmark: Triton paged attention vs the torch reference vs the roofline, on a CUDA GPU.

  python -m turnspec.benchmarks.kernels.paged_attention --json out/bench_paged_attention.json

Sweep: decode (q=1) and verify (q=16) at batch 1/8/32 and context 512/2048/8192, for SmolLM2
(9 q / 3 kv heads, head_dim 64) and a Qwen3-8B-like layer (32/8, 128). Every row's context is the
full `ctx` (the new tokens included). Each config is first checked against an fp32 reference on
upcast inputs (output poisoned with NaN first). Floor = max(K/V/q/out bytes over the measured copy
bandwidth, attention FLOPs over the measured bf16 matmul rate); %roof = floor / graph time.
Triton variants: `s=N` fixes the number of KV splits (split-K), `auto` is what the wrapper picks.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, fields
from pathlib import Path

import torch
import triton

from turnspec.benchmarks.kernels.timing import (
    copy_bandwidth_gbs,
    device_meta,
    graph_ms,
    matmul_tflops,
    median_ms,
    print_table,
    require_cuda,
    write_json,
)
from turnspec.kernels.paged_attention import (
    default_num_splits,
    query_tiling,
    reference_paged_attention,
    triton_paged_attention,
)

SHAPES = {"smollm2": (9, 3, 64), "qwen3-8b": (32, 8, 128)}  # n_heads, n_kv_heads, head_dim
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
TOL = {"bf16": 2e-2, "fp16": 5e-3, "fp32": 1e-3}  # fp32: tf32-free ("ieee") dots, loose bound
ROTATE_BYTES = 256 << 20  # K/V sets rotated per graph: distinct data per call, no L2 reuse


@dataclass(slots=True, frozen=True)
class BenchConfig:
    shapes: tuple[str, ...]
    batches: tuple[int, ...]
    contexts: tuple[int, ...]
    q_lens: tuple[int, ...]
    splits: tuple[str, ...]
    page: int
    dtype: str
    block_n: int
    num_warps: int
    json: Path | None

    def __post_init__(self) -> None:
        for name in self.shapes:
            if name not in SHAPES:
                raise ValueError(f"--shapes: unknown {name!r}, expected some of {sorted(SHAPES)}")
        if self.dtype not in DTYPES:
            raise ValueError(f"--dtype: expected one of {sorted(DTYPES)}, got {self.dtype!r}")
        for s in self.splits:
            if s != "auto" and not (s.isdigit() and 1 <= int(s) <= 256):
                raise ValueError(f"--splits: expected 'auto' or 1..256, got {s!r}")
        if min(self.batches + self.contexts + self.q_lens) < 1 or self.page < 1:
            raise ValueError("--batches/--ctx/--q/--page: expected positive integers")
        if self.block_n not in (16, 32, 64, 128):
            raise ValueError(f"--block-n: expected 16, 32, 64 or 128, got {self.block_n}")
        if self.num_warps not in (0, 1, 2, 4, 8, 16):
            raise ValueError(f"--num-warps: expected 0 (auto), 1, 2, 4, 8 or 16, got {self.num_warps}")


def parse_args() -> BenchConfig:
    ints = lambda s: tuple(int(x) for x in s.split(","))  # noqa: E731
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="smollm2,qwen3-8b", help=f"comma list of {sorted(SHAPES)}")
    p.add_argument("--batches", type=ints, default=(1, 8, 32))
    p.add_argument("--ctx", type=ints, default=(512, 2048, 8192), help="KV length per row")
    p.add_argument("--q", type=ints, default=(1, 16), help="queries per row: 1 = decode, 16 = verify")
    p.add_argument("--splits", default="1,auto", help="Triton KV splits to time: 'auto' and/or ints")
    p.add_argument("--page", type=int, default=16, help="KV block size (tokens)")
    p.add_argument("--dtype", default="bf16", help=f"one of {sorted(DTYPES)}")
    p.add_argument("--block-n", type=int, default=64, help="keys per inner-loop tile")
    p.add_argument("--num-warps", type=int, default=0, help="0 = the wrapper's choice")
    p.add_argument("--json", type=Path, default=None, help="write rows + device meta here")
    a = p.parse_args()
    return BenchConfig(tuple(a.shapes.split(",")), a.batches, a.ctx, a.q,
                       tuple(a.splits.split(",")), a.page, a.dtype, a.block_n, a.num_warps,
                       a.json)


def make_inputs(shape: str, b: int, ctx: int, n_q: int, page: int, dtype: torch.dtype,
                device: str = "cuda") -> dict:
    n_heads, n_kv, hd = SHAPES[shape]
    blocks_per_row = -(-ctx // page)
    kv_bytes = 2 * b * blocks_per_row * page * n_kv * hd * dtype.itemsize
    sets = max(1, min(32, ROTATE_BYTES // kv_bytes))
    num_blocks = sets * b * blocks_per_row
    g = torch.Generator(device=device).manual_seed(b * 100003 + ctx * 7 + n_q)
    pool = lambda: torch.randn(num_blocks, page, n_kv, hd, device=device, generator=g, dtype=dtype)  # noqa: E731
    tables = torch.randperm(num_blocks, device=device, generator=g).view(sets, b, blocks_per_row)
    return dict(q=torch.randn(b, n_q, n_heads, hd, device=device, generator=g, dtype=dtype),
                k_pool=pool(), v_pool=pool(), tables=tables.to(torch.int32),
                kv_lens=torch.full((b,), ctx, dtype=torch.int32, device=device),
                q_lens=torch.full((b,), n_q, dtype=torch.int32, device=device),
                kv_lens_host=[ctx] * b, scale=hd ** -0.5, sets=sets)


def rotating(fn, inp: dict):
    """fn(tables) called with the next K/V set's block table on every call."""
    state = {"i": 0}

    def call():
        state["i"] = (state["i"] + 1) % inp["sets"]
        return fn(inp["tables"][state["i"]])
    return call


def bench_config(cfg: BenchConfig, shape: str, b: int, ctx: int, n_q: int, bw_gbs: float,
                 tflops: float, device: str = "cuda") -> list[dict]:
    dtype = DTYPES[cfg.dtype]
    inp = make_inputs(shape, b, ctx, n_q, cfg.page, dtype, device)
    n_heads, n_kv, hd = SHAPES[shape]
    args = lambda t: (inp["q"], inp["k_pool"], inp["v_pool"], t, inp["kv_lens"], inp["q_lens"], inp["scale"])  # noqa: E731
    nbytes = (2 * b * ctx * n_kv * hd + 2 * b * n_q * n_heads * hd) * dtype.itemsize
    flops = 4 * b * n_q * n_heads * ctx * hd
    floor_us = max(nbytes / (bw_gbs * 1e3), flops / (tflops * 1e6))
    up = {k: inp[k].float() for k in ("q", "k_pool", "v_pool")}
    truth = reference_paged_attention(up["q"], up["k_pool"], up["v_pool"], *args(inp["tables"][0])[3:],
                                      inp["kv_lens_host"])
    del up
    q_tiles = triton.cdiv(n_q, query_tiling(n_q, n_heads // n_kv)[1])
    auto = default_num_splits(b, n_kv, q_tiles, ctx, inp["q"].device)
    variants = [("torch-ref", None)]
    for s in cfg.splits:
        n = auto if s == "auto" else int(s)
        label = f"triton s={n}" + (" auto" if n == auto else "")
        if all(v[1] != n for v in variants):
            variants.append((label, n))
    rows = []
    for label, splits in variants:
        if splits is None:
            fn = lambda t: reference_paged_attention(*args(t), inp["kv_lens_host"])  # noqa: E731
            err = math.nan
        else:
            fn = lambda t, s=splits: triton_paged_attention(  # noqa: E731
                *args(t), inp["kv_lens_host"], num_splits=s, block_n=cfg.block_n,
                num_warps=cfg.num_warps or None)
            out = torch.full_like(inp["q"], float("nan"))
            triton_paged_attention(*args(inp["tables"][0]), inp["kv_lens_host"], out=out,
                                   num_splits=splits, block_n=cfg.block_n,
                                   num_warps=cfg.num_warps or None)
            err = ((out.float() - truth).norm() / truth.norm()).item()  # NaN if anything unwritten
        eager = median_ms(rotating(fn, inp)) * 1e3
        graph = graph_ms(rotating(fn, inp), calls=inp["sets"]) * 1e3
        best = graph if not math.isnan(graph) else eager
        ok = splits is None or err < TOL[cfg.dtype]  # a NaN error (unwritten output) fails
        rows.append(dict(shape=shape, mode="decode" if n_q == 1 else "verify", batch=b, ctx=ctx,
                         q=n_q, variant=label, splits=splits, eager_us=eager, graph_us=graph,
                         gbs=nbytes / (best * 1e3), floor_us=floor_us, pct_roof=100 * floor_us / best,
                         rel_err=err, ok=ok,
                         kv_mb=nbytes / 2**20))
    return rows


COLUMNS = [("shape", "shape", ""), ("mode", "mode", ""), ("batch", "b", "d"), ("ctx", "ctx", "d"),
           ("q", "q", "d"), ("variant", "variant", ""), ("kv_mb", "MiB", ".2f"),
           ("eager_us", "eager_us", ".1f"), ("graph_us", "graph_us", ".1f"), ("gbs", "GB/s", ".0f"),
           ("floor_us", "floor_us", ".1f"), ("pct_roof", "%roof", ".1f"), ("rel_err", "rel_err", ".1e")]


def main() -> None:
    cfg = parse_args()
    require_cuda("bench_paged_attention")
    meta = device_meta()
    meta["copy_gbs"] = bw = copy_bandwidth_gbs()
    meta["matmul_tflops"] = tf = matmul_tflops(torch.bfloat16)
    meta["config"] = {f.name: (str(v) if isinstance(v := getattr(cfg, f.name), Path) else v)
                      for f in fields(cfg)}
    print(f"{meta['device']} ({meta['sms']} SMs)  torch {meta['torch']}  triton {meta['triton']}  "
          f"copy {bw:.0f} GB/s (read+write)  bf16 matmul {tf:.0f} TFLOP/s")
    rows = []
    for shape in cfg.shapes:
        for n_q in cfg.q_lens:
            for b in cfg.batches:
                for ctx in cfg.contexts:
                    rows += bench_config(cfg, shape, b, ctx, n_q, bw, tf)
                    torch.cuda.empty_cache()
    print_table(rows, COLUMNS)
    bad = [r for r in rows if not r["ok"]]
    for r in bad:
        print(f"MISMATCH {r['shape']} b={r['batch']} ctx={r['ctx']} q={r['q']} {r['variant']}: "
              f"rel_err {r['rel_err']:.2e} > {TOL[cfg.dtype]:.0e}")
    write_json(cfg.json, meta, rows)
    if bad:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
