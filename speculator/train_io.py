"""Training side jobs: device choice, the run log, eval splits, checkpoints (resume)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import torch
from tqdm import tqdm

from turnspec.engine.drafter.config import DFlashConfig
from turnspec.engine.drafter.model import DFlashDrafter
from turnspec.speculator.data import Sample, copied_share
from turnspec.speculator.eval_set import SOURCES as INDEPENDENT
from turnspec.speculator.target import FrozenTarget
from turnspec.speculator.tau import evaluate_tau, format_interval

COPIED = 0.6  # eval_splits: held-out answers at least this much copied from their prompt


def resolve_device(name: str) -> torch.device:
    """"auto" -> cuda when present, else cpu; anything else as torch spells it."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(name)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={name!r}: CUDA is not available here; expected cpu or auto")
    return dev


class RunLog:
    """Timestamped lines to a file and (around the progress bar) to the terminal."""

    def __init__(self, path: Path | None, echo: bool = True) -> None:
        self.path, self.echo = path, echo
        self.t0 = time.perf_counter()

    def __call__(self, msg: str) -> None:
        line = f"[{time.perf_counter() - self.t0:8.1f}s] {msg}"
        if self.path is not None:
            with self.path.open("a") as f:
                f.write(line + "\n")
        if self.echo:
            tqdm.write(line)

    def metrics(self, m: dict) -> None:
        self(json.dumps(m, separators=(",", ":")))


def spread_indices(count: int, n: int) -> list[int]:
    """n positions spread evenly over range(count) (all of them when count <= n)."""
    if count <= n:
        return list(range(count))
    stride = count / n
    return [int(i * stride) for i in range(n)]


def _spread(samples: list[Sample], n: int) -> list[Sample]:
    """n samples spread evenly over the list (deterministic)."""
    return [samples[i] for i in spread_indices(len(samples), n)]


def eval_splits(samples: list[Sample], n: int, with_train: bool = False) -> dict[str, list[Sample]]:
    """Held-out samples per source ("tools-heldout", "generic-heldout"), at most n each, plus
    "tools-heldout-copied": the held-out tool turns whose answer is mostly (>= COPIED) a copy
    from the prompt (`copied_share`), the drafter's weak spot; with with_train also
    "train-sample" (n training samples, to see the generalisation gap). The independent set's
    sources (held out by construction) name their split alone: "independent-voice",
    "independent-generic"."""
    out: dict[str, list[Sample]] = {}
    for source in sorted({s.source for s in samples}):
        held = [s for s in samples if s.split == "heldout" and s.source == source]
        if held:
            out[source if source in INDEPENDENT else f"{source}-heldout"] = _spread(held, n)
        copied = [s for s in held if source == "tools" and copied_share(s) >= COPIED]
        if copied:
            out["tools-heldout-copied"] = _spread(copied, n)
    if with_train:
        train = [s for s in samples if s.split == "train"]
        if not train:
            raise ValueError("eval_splits: with_train asks for a train sample, but these samples "
                             "hold no train split (held-out files only?)")
        out["train-sample"] = _spread(train, n)
    return out


def run_evals(drafter: DFlashDrafter, target: FrozenTarget, evals: dict[str, list[Sample]],
              block_size: int, max_len: int, log: RunLog) -> dict[str, dict]:
    """tau per split; 128 sequences per replay batch on CUDA (one drafter pass per step)."""
    batch = 128 if target.device.type == "cuda" else 16
    out = {}
    for name, samples in evals.items():
        t = time.perf_counter()
        r = evaluate_tau(drafter, target, samples, block_size=block_size, max_len=max_len,
                         batch_size=batch)
        out[name] = r.to_dict()
        log(f"tau[{name}] = {r.tau:.3f} (90% CI {format_interval(r.ci90)}) over "
            f"{r.steps} steps, {r.samples} samples ({time.perf_counter() - t:.1f}s)")
    return out


def save_checkpoint(path: Path, drafter: DFlashDrafter, opt: torch.optim.Optimizer,
                    dev_gen: torch.Generator, dcfg: DFlashConfig, state: dict) -> None:
    """Atomic write (tmp + rename): a kill mid-save never leaves a torn checkpoint."""
    tmp = path.with_suffix(".tmp")
    torch.save({"drafter": drafter.state_dict(), "optimizer": opt.state_dict(),
                "dev_gen": dev_gen.get_state(), "config": dcfg.to_hf_dict(), "state": state},
               tmp)
    os.replace(tmp, path)


def load_checkpoint(path: Path, drafter: DFlashDrafter, opt: torch.optim.Optimizer,
                    dev_gen: torch.Generator, dcfg: DFlashConfig) -> dict:
    ck = torch.load(path, map_location="cpu", weights_only=False)
    saved = DFlashConfig.from_hf_dict(ck["config"])
    if saved != dcfg:
        raise ValueError(f"{path}: checkpoint drafter config {saved} differs from this run's "
                         f"{dcfg}; expected the same flags (or a fresh --out)")
    drafter.load_state_dict(ck["drafter"])
    opt.load_state_dict(ck["optimizer"])
    dev_gen.set_state(ck["dev_gen"])
    return ck["state"]
