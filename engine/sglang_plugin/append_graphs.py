"""The drafter's context write after each decode step, replayed from CUDA graphs
(`TURNSPEC_SGLANG_APPEND_GRAPHS=1`, `turnspec serve --sglang-append-graphs`).

After every verify DFLASH writes the committed tokens' target hidden states into the drafter's
KV (`DFlashWorkerV2._append_target_hidden_to_draft_kv_by_loc` with the verify's slots
[bs, width] and each row's commit length): the context projection, every layer's K and V, a
write per layer. SGLang runs it eagerly, about ten launches and the Python around them, in a
step the host bounds at low load. Its shapes are fixed by the batch size and the width (a row's
slots past its commit length are not written), so it is captured once per batch size at start,
for DFLASH's width and, under width "served" or "plain", the plain step's one (plain.py).

The graphs run SGLang's own call, on a copy of its fused KV helper with a workspace of its own:
SGLang's grows with the prefills' writes (eager, any length), and the old buffer it frees would
be the one a graph reads. A step of bs rows replays the smallest captured size >= bs: its inputs
are copied into the graph's, and the padding rows get a commit length of 0 (nothing written).
Any other write (a prefill's, a batch past the largest size) runs SGLang's call as before.
"""

from __future__ import annotations

import copy
from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

import torch

from turnspec.engine.sglang_plugin.state import STATE


@dataclass(slots=True)
class Captured:
    """One graph and the inputs it reads: hidden [bs*w, H], positions [bs*w], slots [bs*w] and
    [bs, w], commit lengths [bs] int32."""
    graph: Any
    hidden: torch.Tensor
    positions: torch.Tensor
    loc: torch.Tensor
    loc2d: torch.Tensor
    commit: torch.Tensor

    @classmethod
    def inputs(cls, bs: int, width: int, hidden: int, dtype: torch.dtype,
               device: torch.device | str) -> Captured:
        """Inputs that write nothing: every row's commit length 0, every slot the dummy 0."""
        n = bs * width
        return cls(None, torch.zeros((n, hidden), dtype=dtype, device=device),
                   torch.zeros(n, dtype=torch.int64, device=device),
                   torch.zeros(n, dtype=torch.int64, device=device),
                   torch.zeros((bs, width), dtype=torch.int64, device=device),
                   torch.zeros(bs, dtype=torch.int32, device=device))

    def kwargs(self) -> dict[str, torch.Tensor]:
        """SGLang's call's keyword arguments."""
        return {"target_hidden": self.hidden, "cache_loc": self.loc, "positions": self.positions,
                "cache_loc_2d": self.loc2d, "commit_lens": self.commit}

    def load(self, hidden: torch.Tensor, positions: torch.Tensor, loc2d: torch.Tensor,
             commit: torch.Tensor) -> None:
        """A step's inputs of bs <= this graph's rows into its buffers; padding rows commit 0."""
        bs, n = int(loc2d.shape[0]), int(hidden.shape[0])  # the 1-D slots stay: SGLang reads
        self.hidden[:n].copy_(hidden)                       # them only without the 2-D ones
        self.positions[:n].copy_(positions.reshape(-1))
        self.loc2d[:bs].copy_(loc2d)
        self.commit[:bs].copy_(commit)
        if bs < self.commit.shape[0]:
            self.commit[bs:].zero_()


class AppendGraphs:
    """The captured writes, by (batch size, width)."""

    def __init__(self) -> None:
        self.graphs: dict[tuple[int, int], Captured] = {}
        self.sizes: dict[int, list[int]] = {}  # width -> captured batch sizes, ascending

    def add(self, bs: int, width: int, captured: Captured) -> None:
        self.graphs[(bs, width)] = captured
        self.sizes[width] = sorted({*self.sizes.get(width, []), bs})

    def size_for(self, bs: int, width: int) -> int | None:
        """The smallest captured batch size >= bs at `width` (None: none is)."""
        sizes = self.sizes.get(width, [])
        i = bisect_left(sizes, bs)
        return sizes[i] if i < len(sizes) else None

    def run(self, hidden: torch.Tensor, positions: torch.Tensor, loc2d: torch.Tensor,
            commit: torch.Tensor) -> bool:
        """Replay the write of this step; False where no graph fits it (the caller runs it)."""
        bs, width = int(loc2d.shape[0]), int(loc2d.shape[1])
        size = self.size_for(bs, width)
        if size is None or hidden.shape[0] != bs * width:
            return False
        captured = self.graphs[(size, width)]
        if hidden.shape[1] != captured.hidden.shape[1] or hidden.device != captured.hidden.device:
            return False
        captured.load(hidden, positions, loc2d, commit)
        captured.graph.replay()
        return True


def capture(worker: Any, sizes: list[int], widths: list[int]) -> AppendGraphs:
    """SGLang's write (the worker's method; `around_append` passes it through while no graphs
    are set) captured for each batch size and width, the largest first (the workspace of the
    helper copy is sized by then and never grows after)."""
    helper = getattr(worker, "_fused_kv_helper", None)
    if helper is None or not getattr(worker, "_use_fused_kv_materialize", False):
        raise RuntimeError("turnspec sglang plugin: append graphs capture SGLang's fused KV write "
                           "of the drafter's context, which this worker does not use; expected "
                           "DFLASH's fused KV helper (or TURNSPEC_SGLANG_APPEND_GRAPHS=0)")
    own = copy.copy(helper)  # the weights shared, the workspace the graphs' own
    own._proj_workspace = own._k_workspace = own._v_workspace = None
    own._workspace_capacity = 0
    fc = worker.draft_model.fc
    graphs, pool, side = AppendGraphs(), torch.cuda.graph_pool_handle(), torch.cuda.Stream()
    worker._fused_kv_helper = own
    try:
        for width in widths:
            for bs in sorted(set(sizes), reverse=True):
                c = Captured.inputs(bs, width, int(fc.in_features), fc.weight.dtype, worker.device)
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):  # once eagerly: compiles, sizes the workspace
                    worker._append_target_hidden_to_draft_kv_by_loc(**c.kwargs())
                torch.cuda.current_stream().wait_stream(side)
                c.graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(c.graph, pool=pool):
                    worker._append_target_hidden_to_draft_kv_by_loc(**c.kwargs())
                graphs.add(bs, width, c)
    finally:
        worker._fused_kv_helper = helper
    if not worker._use_fused_kv_materialize:
        raise RuntimeError("turnspec sglang plugin: SGLang's fused KV write failed while its "
                           "append graphs were captured (see its warning above); expected it to "
                           "run (or TURNSPEC_SGLANG_APPEND_GRAPHS=0)")
    return graphs


# the hooks (hooks.install registers them with the config's append_graphs)

def after_init_cuda_graphs(result: Any, *args: Any, **kwargs: Any) -> Any:
    """AFTER DFlashWorkerV2.init_cuda_graphs: the writes captured at every batch size the
    target's decode graphs were captured at, for DFLASH's width and the plain step's."""
    worker = args[0]
    STATE.append_graphs = None  # SGLang's own write while these are captured
    runner = getattr(worker.model_runner, "decode_cuda_graph_runner", None)
    if runner is None:
        raise RuntimeError("turnspec sglang plugin: append graphs replay beside the target's "
                           "decode CUDA graphs, which are off; expected CUDA graphs on (or "
                           "TURNSPEC_SGLANG_APPEND_GRAPHS=0)")
    widths = list(STATE.config.step_widths(int(worker.block_size)))
    STATE.append_graphs = capture(worker, [int(b) for b in runner.capture_bs], widths)
    return result


def around_append(original: Any, worker: Any, **kw: Any) -> Any:
    """A decode step's write (slots [bs, width] and commit lengths) from its graph where one
    fits; any other write as SGLang runs it."""
    graphs, loc2d, commit = STATE.append_graphs, kw.get("cache_loc_2d"), kw.get("commit_lens")
    if (graphs is not None and loc2d is not None and commit is not None
            and graphs.run(kw["target_hidden"], kw["positions"], loc2d, commit)):
        STATE.stats["append_replays"] += 1
        return None
    return original(worker, **kw)
