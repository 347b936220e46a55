"""The plugin's state in one SGLang scheduler process (one DFLASH worker per process): its
config, the decode step in flight, the tokens the last step committed that the scheduler has
not yet added to its requests (overlap scheduling), and counters."""

from __future__ import annotations

import functools
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from turnspec.engine.sglang_plugin.config import PluginConfig
from turnspec.engine.spec.options import SpecOptions
from turnspec.engine.spec.proposers.lookup import PromptLookup

# the first three are kernels/plan_lookup.py's; tree_branch_paths: rows whose accepted path left
# the tree's chain of first nodes (a branch paid)
DEVICE_COUNTERS = ("rows_swapped", "grammar_rows_swapped", "history_misses", "tree_branch_paths")


@dataclass(slots=True)
class StepContext:
    """One DFLASH decode step of `worker` over `batch`, while the worker runs it."""
    worker: Any
    batch: Any
    # the drafter's top tokens and log-probabilities [bs*(B-1), k+1] when its head ran eagerly
    # this step (the CUDA-graph path leaves them in the sampler's buffers instead)
    eager_top: tuple[Any, Any] | None = None
    planned: bool = False
    tree: Any | None = None  # mode "trees": the step's trees (trees.Tree)
    plain: bool = False  # width "served": this step is plain decode (plain.py), nothing planned


@dataclass(slots=True)
class Pending:
    """What the last step committed, copied to the host as the step ended: row i's tokens are
    tokens[i * stride : i * stride + counts[i]] (counts None: one token a row). `done`: the
    copy's CUDA event (None on the CPU)."""
    rids: list[str]
    tokens: Any
    counts: Any | None
    stride: int
    done: Any | None = None

    @classmethod
    def copy_of(cls, rids: list[str], tokens: Any, counts: Any | None, stride: int) -> Pending:
        """Start the host copy of a step's commits behind the step on its stream (no sync)."""
        (host_tokens, host_counts), done = to_host(tokens, counts)
        return cls(rids, host_tokens, host_counts, stride, done)

    def by_rid(self) -> dict[str, list[int]]:
        """rid -> committed tokens; waits for the copy, not for what the GPU queued after it."""
        if self.done is not None:
            self.done.synchronize()
        toks = self.tokens.tolist()
        counts = self.counts.tolist() if self.counts is not None else [1] * len(self.rids)
        return {rid: toks[i * self.stride : i * self.stride + int(counts[i])]
                for i, rid in enumerate(self.rids)}


@dataclass(slots=True)
class PluginState:
    config: PluginConfig = field(default_factory=PluginConfig)
    options: SpecOptions = field(default_factory=SpecOptions)
    lookup: PromptLookup = field(default_factory=PromptLookup)
    step: StepContext | None = None
    pending: Pending | None = None
    overlap: bool = False
    history: Any | None = None  # plan_at "device": each request's tokens on the GPU (history.py)
    mask_checked: bool = False  # mode "trees": the verify graphs' mask buffer was checked
    store: Any | None = None  # the datastore branch (datastore.StoreBranch), built at start
    stats: Counter = field(default_factory=Counter)
    sync_sites: set[str] = field(default_factory=set)  # where sync_free saw a host sync
    # counters kept on the device (plan_at "device": reading them each step would wait for it),
    # DEVICE_COUNTERS in order
    device_stats: Any | None = None
    # width "served" (plain.py): the plain step's backend and graphs, the pace choosing between
    # it and DFLASH's step, the wide steps' commits on their way to the host
    plain: Any | None = None
    pace: Any | None = None
    tally: Any | None = None
    building_plain: bool = False  # the plain step's graphs are being captured (a chain's)
    append_graphs: Any | None = None  # the drafter's context writes as CUDA graphs (append_graphs.py)

    def configure(self, config: PluginConfig) -> None:
        self.config, self.options = config, config.options()
        # built with the worker's graphs (plain.py, append_graphs.py)
        self.plain = self.pace = self.tally = self.append_graphs = None

    def take_pending(self) -> dict[str, list[int]]:
        """The last step's commits not yet in the scheduler's requests (only under overlap
        scheduling, where the scheduler adds a step's tokens after launching the next)."""
        pending, self.pending = self.pending, None
        return pending.by_rid() if pending is not None and self.overlap else {}

    def device_counts(self, device: Any) -> torch.Tensor:
        """The device counters [len(DEVICE_COUNTERS)] int64, made on first use."""
        if self.device_stats is None:
            self.device_stats = torch.zeros(len(DEVICE_COUNTERS), dtype=torch.int64, device=device)
        return self.device_stats

    def report(self) -> dict[str, Any]:
        """The counters (a host sync for those kept on the device)."""
        stats = Counter(self.stats)
        if self.device_stats is not None:
            for name, value in zip(DEVICE_COUNTERS, self.device_stats.tolist(), strict=True):
                stats[name] += value
        out = {"mode": self.config.mode, **dict(stats)}
        if self.pace is not None:  # width "served" or "plain": what it measured (spec/width.py)
            out["pace"] = self.pace.table()
        if self.config.sync_check:
            out["host_sync_sites"] = sorted(self.sync_sites)
        return out


STATE = PluginState()


def arg(args: tuple, kwargs: dict, index: int, name: str) -> Any:
    """A hooked call's argument, however the caller passed it."""
    return args[index] if len(args) > index else kwargs[name]


def to_host(*tensors: Any) -> tuple[list[Any], Any | None]:
    """Host copies of `tensors` (None stays None), started behind the work queued on the current
    stream, and the CUDA event that marks them done (None when none was on CUDA): nothing
    waits here; read a copy once its event is done."""
    host = [t.to("cpu", non_blocking=True) if t is not None else None for t in tensors]
    done = None
    if any(t is not None and t.is_cuda for t in tensors):
        done = torch.cuda.Event()
        done.record()
    return host, done


def on_device(data: Any, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """Host values (nested lists, or a numpy array) as a tensor on `device` without waiting
    for it: on CUDA from pinned memory, copied asynchronously."""
    host = torch.as_tensor(data, dtype=dtype)  # torch.tensor(numpy, pin_memory=True) raises
    if device.type == "cuda":
        host = host.pin_memory()
    return host.to(device, non_blocking=True)


def sync_free(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn`, the plugin's own work in a step, meant never to wait for the GPU. With the config's
    sync_check on CUDA, torch's sync debug mode watches it: each host sync inside (an .item(), a
    blocking copy) counts in `host_syncs`, its file:line in the report's `host_sync_sites`."""
    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        if not (STATE.config.sync_check and torch.cuda.is_available()):
            return fn(*args, **kwargs)
        before = torch.cuda.get_sync_debug_mode()
        torch.cuda.set_sync_debug_mode("warn")
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                return fn(*args, **kwargs)
        finally:
            torch.cuda.set_sync_debug_mode(before)
            syncs = [w for w in caught if "synchroniz" in str(w.message)]
            STATE.stats["host_syncs"] += len(syncs)
            STATE.sync_sites.update(f"{w.filename}:{w.lineno}" for w in syncs)
    return checked
