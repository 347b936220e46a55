"""The drafter's context writes from CUDA graphs (append_graphs.py), on the CPU: a decode step's
write replays the graph of the smallest captured batch size that holds it, with the step's
inputs in the graph's buffers and the padding rows' commit lengths 0 (so they write nothing);
any write no graph fits, a prefill's among them, runs SGLang's call. The graph here stands in
for the captured call: its replay runs the same write eagerly over its buffers (the capture
itself needs CUDA: tests/engine/test_sglang_append_graphs_cuda.py runs SGLang's)."""

from __future__ import annotations

import torch

from turnspec.engine.sglang_plugin import append_graphs as ag
from turnspec.engine.sglang_plugin.state import STATE

H = 4  # the target hidden's width


def write(kv: torch.Tensor, target_hidden, cache_loc, positions, cache_loc_2d=None,
          commit_lens=None) -> None:
    """The drafter's KV write as SGLang's prefix-valid path does it: row r's first commit_lens[r]
    slots get their tokens' (hidden + position)."""
    vals = target_hidden.sum(-1) + positions.reshape(-1).to(target_hidden.dtype)
    width = cache_loc_2d.shape[1]
    for r in range(cache_loc_2d.shape[0]):
        for j in range(int(commit_lens[r])):
            kv[cache_loc_2d[r, j]] = vals[r * width + j]


class Graph:
    def __init__(self, kv: torch.Tensor, captured: ag.Captured) -> None:
        self.kv, self.c, self.replays = kv, captured, 0

    def replay(self) -> None:
        self.replays += 1
        write(self.kv, **self.c.kwargs())


def graphs_of(kv: torch.Tensor, sizes: list[int], width: int) -> ag.AppendGraphs:
    out = ag.AppendGraphs()
    for bs in sizes:
        c = ag.Captured.inputs(bs, width, H, torch.float32, "cpu")
        c.graph = Graph(kv, c)
        out.add(bs, width, c)
    return out


def step_inputs(bs: int, width: int, seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"target_hidden": torch.randn(bs * width, H, generator=g),
            "positions": torch.arange(bs * width) + 100,
            "cache_loc": torch.arange(bs * width) + 10,
            "cache_loc_2d": (torch.arange(bs * width) + 10).view(bs, width),
            "commit_lens": torch.randint(1, width + 1, (bs,), generator=g, dtype=torch.int32)}


def test_a_step_replays_the_smallest_graph_that_holds_it_and_its_padding_writes_nothing() -> None:
    width = 4
    want, got = torch.zeros(64), torch.zeros(64)
    graphs = graphs_of(got, [1, 2, 4, 8], width)
    assert [graphs.size_for(b, width) for b in (1, 3, 5, 8, 9)] == [1, 4, 8, 8, None]
    for seed, bs in enumerate([8, 3, 1, 5]):  # a large step first: stale rows in the buffers
        kw = step_inputs(bs, width, seed)
        write(want, **kw)
        assert graphs.run(kw["target_hidden"], kw["positions"], kw["cache_loc_2d"],
                          kw["commit_lens"])
        assert torch.equal(got, want), bs
    assert graphs.graphs[(8, width)].graph.replays == 2 and graphs.graphs[(4, width)].graph.replays == 1
    kw = step_inputs(9, width, 9)  # past the largest size; another width: no graph
    assert not graphs.run(kw["target_hidden"], kw["positions"], kw["cache_loc_2d"], kw["commit_lens"])
    kw = step_inputs(2, 1, 1)
    assert not graphs.run(kw["target_hidden"], kw["positions"], kw["cache_loc_2d"], kw["commit_lens"])


def test_the_hook_replays_decode_writes_and_passes_every_other_write_to_sglang() -> None:
    kv = torch.zeros(64)
    calls: list[str] = []

    def original(worker, **kw):
        calls.append("sglang")
        if kw.get("cache_loc_2d") is not None:
            write(kv, **kw)

    STATE.stats.clear()
    STATE.append_graphs = None
    try:
        kw = step_inputs(2, 4, 0)
        ag.around_append(original, object(), **kw)              # no graphs yet (capture time)
        STATE.append_graphs = graphs_of(kv, [2], 4)
        ag.around_append(original, object(), **kw)
        prefill = {"target_hidden": torch.randn(5, H), "cache_loc": torch.arange(5),
                   "positions": torch.arange(5)}
        ag.around_append(original, object(), **prefill)         # ragged: SGLang's own
        assert calls == ["sglang", "sglang"] and STATE.stats["append_replays"] == 1
    finally:
        STATE.append_graphs = None
