"""Benchmark: DFlash accept rule, Triton vs the torch reference, on a CUDA GPU.

  python -m turnspec.benchmarks.kernels.dflash_accept --json out/bench_dflash_accept.json

Each row also times the variant followed by its device->host copy (`+d2h`), which is what the
engine step pays: the packed kernel makes one copy, the reference path stacks and copies once.
The byte floor (token reads + result writes over the measured copy bandwidth) is nanoseconds:
this op is launch-bound, so the useful comparison is eager/graph time, not %roof.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, fields
from pathlib import Path

import torch

from turnspec.benchmarks.kernels.timing import (
    copy_bandwidth_gbs,
    device_meta,
    graph_ms,
    median_ms,
    print_table,
    require_cuda,
    write_json,
)
from turnspec.kernels.dflash_accept import (
    reference_dflash_accept,
    triton_dflash_accept,
    triton_dflash_accept_packed,
)


@dataclass(slots=True, frozen=True)
class BenchConfig:
    batches: tuple[int, ...]
    block: int
    vocab: int
    json: Path | None

    def __post_init__(self) -> None:
        if min(self.batches) < 1 or not 1 <= self.block <= 1024 or self.vocab < 2:
            raise ValueError(f"expected batches >= 1, 1 <= block <= 1024, vocab >= 2; got "
                             f"{self.batches}, {self.block}, {self.vocab}")


def parse_args() -> BenchConfig:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batches", default="1,8,32,128", help="comma list of batch sizes")
    p.add_argument("--block", type=int, default=16, help="DFlash block size B (B-1 drafts)")
    p.add_argument("--vocab", type=int, default=49152)
    p.add_argument("--json", type=Path, default=None, help="write rows + device meta here")
    a = p.parse_args()
    return BenchConfig(tuple(int(x) for x in a.batches.split(",")), a.block, a.vocab, a.json)


def planted(b: int, block: int, vocab: int, device: str = "cuda") -> tuple[torch.Tensor, torch.Tensor]:
    """Target tokens plus drafts that match up to a uniform random accept length."""
    g = torch.Generator(device=device).manual_seed(b * 31 + block)
    target = torch.randint(0, vocab, (b, block), device=device, generator=g)
    accept = torch.randint(0, block, (b, 1), device=device, generator=g)
    k = torch.arange(block - 1, device=device).view(1, -1)
    noise = torch.randint(1, vocab, (b, block - 1), device=device, generator=g)
    drafts = torch.where(k < accept, target[:, :-1], (target[:, :-1] + noise) % vocab)
    return drafts, target


def reference_packed(drafts: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    accept_len, bonus = reference_dflash_accept(drafts, target)
    return torch.stack([accept_len.long(), bonus], dim=1)


def bench_batch(cfg: BenchConfig, b: int, bw_gbs: float, device: str = "cuda") -> list[dict]:
    drafts, target = planted(b, cfg.block, cfg.vocab, device)
    ref_accept, ref_bonus = reference_dflash_accept(drafts, target)
    nbytes = (drafts.numel() + target.numel()) * 8 + b * (4 + 8)
    floor_us = nbytes / (bw_gbs * 1e3)
    variants = {
        "torch-ref": lambda: reference_dflash_accept(drafts, target),
        "triton": lambda: triton_dflash_accept(drafts, target),
        "triton-packed": lambda: triton_dflash_accept_packed(drafts, target),
        "torch-ref-packed+d2h": lambda: reference_packed(drafts, target).cpu(),
        "triton-packed+d2h": lambda: triton_dflash_accept_packed(drafts, target).cpu(),
    }
    a, bo = triton_dflash_accept(drafts, target)
    packed = triton_dflash_accept_packed(drafts, target)
    exact = (torch.equal(a, ref_accept) and torch.equal(bo, ref_bonus)
             and torch.equal(packed, torch.stack([ref_accept.long(), ref_bonus], 1)))
    rows = []
    for name, fn in variants.items():
        eager = median_ms(fn) * 1e3
        graph = math.nan if name.endswith("+d2h") else graph_ms(fn, calls=16) * 1e3
        rows.append(dict(batch=b, block=cfg.block, variant=name, eager_us=eager, graph_us=graph,
                         floor_us=floor_us, exact=exact))
    return rows


COLUMNS = [("batch", "b", "d"), ("block", "B", "d"), ("variant", "variant", ""),
           ("eager_us", "eager_us", ".1f"), ("graph_us", "graph_us", ".2f"),
           ("floor_us", "floor_us", ".3f"), ("exact", "exact", "")]


def main() -> None:
    cfg = parse_args()
    require_cuda("bench_dflash_accept")
    meta = device_meta()
    meta["copy_gbs"] = bw = copy_bandwidth_gbs()
    meta["config"] = {f.name: (str(v) if isinstance(v := getattr(cfg, f.name), Path) else v)
                      for f in fields(cfg)}
    print(f"{meta['device']}  torch {meta['torch']}  triton {meta['triton']}  copy {bw:.0f} GB/s")
    rows = [r for b in cfg.batches for r in bench_batch(cfg, b, bw)]
    print_table(rows, COLUMNS)
    write_json(cfg.json, meta, rows)
    if not all(r["exact"] for r in rows):
        raise SystemExit("MISMATCH: Triton accept results differ from the reference (see 'exact')")


if __name__ == "__main__":
    main()
