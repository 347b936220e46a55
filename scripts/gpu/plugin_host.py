"""The host cost of the plugin's own work in a trees step, without SGLang: the hooks run as
DFLASH's worker calls them (engine/sglang_plugin/hooks.py), around stand-ins for SGLang's calls
that do nothing but hand over buffers of the served shapes (SmolLM2-135M: vocabulary 49,152,
five captured layers of 576; DFLASH's block of 16). What is timed is what the plugin adds to a
step: the plan and the mask before the verify (`before_prepare_for_verify`), the settle after it
(`around_target_forward`), and the whole step (`around_forward`: those, the history's append
after the step, and the stand-in's own Python and its one launch, the drafter's block put back
where the plan overwrote it), each on the host (perf_counter, no sync inside) and, for the whole
step, in kernel launches (torch profiler). A batch with a
grammar also walks SGLang's grammar over the trees (not here: it needs SGLang).

Stand-ins: SGLang's KV move (`move_kv_cache`, one Triton launch over every layer) is a torch
gather and scatter over one [layers, slots, width] tensor (two launches); the verify-mask buffer
is a flat uint8 tensor as large as SGLang's for the batch.

usage: python3 scripts/gpu/plugin_host.py [--bs 1 8] [--steps 200] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from array import array
from collections.abc import Callable
from types import SimpleNamespace

import torch

from turnspec.engine.sglang_plugin import hooks, trees
from turnspec.engine.sglang_plugin.config import PluginConfig
from turnspec.engine.sglang_plugin.state import STATE

LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernelEx", "cudaLaunchKernelExC", "cudaMemcpyAsync")


class KVPool:
    """SGLang's target KV pool, as far as the settle uses it."""

    def __init__(self, layers: int, slots: int, width: int, device: torch.device) -> None:
        self.kv = torch.zeros((layers, slots, width), dtype=torch.bfloat16, device=device)

    def move_kv_cache(self, tgt_loc: torch.Tensor, src_loc: torch.Tensor) -> None:
        self.kv[:, tgt_loc] = self.kv[:, src_loc]


class MaskBuffer:
    """The triton backend's verify-mask buffer (FULL_MASK, uint8)."""

    def __init__(self, cells: int, max_bs: int, device: torch.device) -> None:
        self.buffer = torch.zeros(cells, dtype=torch.uint8, device=device)
        self.mode = SimpleNamespace(name="FULL_MASK")
        self.max_bs = max_bs

    def fits(self, bs: int) -> bool:
        return bs <= self.max_bs


class Timer:
    """Host seconds spent in the wrapped calls, per name, this step."""

    def __init__(self) -> None:
        self.step: dict[str, float] = {}

    def wrap(self, name: str, fn: Callable) -> Callable:
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.step[name] = self.step.get(name, 0.0) + time.perf_counter() - t0
        return timed


def setup(bs: int, prompt: int, n: int, vocab: int, hidden: int, device: torch.device,
          gen: torch.Generator) -> dict:
    """A prefilled batch of `bs` greedy rows of `prompt` tokens and the step's stand-ins."""
    STATE.configure(PluginConfig(mode="trees"))
    STATE.history, STATE.device_stats, STATE.overlap = None, None, False
    STATE.stats.clear()
    greedy = SimpleNamespace(top_k=1, temperature=0.0, frequency_penalty=0.0,
                             presence_penalty=0.0, repetition_penalty=1.0)
    cap = prompt + 4096
    reqs = [SimpleNamespace(rid=f"r{i}", req_pool_idx=i, grammar=None, sampling_params=greedy,
                            origin_input_ids=torch.randint(0, vocab, (prompt,),
                                                           generator=gen).tolist(),
                            output_ids=array("q", [7])) for i in range(bs)]

    def batch(extend: bool) -> SimpleNamespace:
        return SimpleNamespace(
            reqs=reqs, forward_mode=SimpleNamespace(is_extend=lambda: extend,
                                                    is_idle=lambda: False),
            req_pool_indices=torch.arange(bs, dtype=torch.int32, device=device),
            req_to_token_pool=SimpleNamespace(req_to_token=torch.zeros(
                (bs + 1, cap), dtype=torch.int32, device=device)),
            seq_lens=torch.full((bs,), prompt + 1, dtype=torch.int32, device=device))

    prefill = SimpleNamespace(next_token_ids=torch.zeros(bs, dtype=torch.int64, device=device),
                              accept_lens=None, speculative_num_draft_tokens=None)
    hooks.around_forward(lambda w, b: prefill, object(), batch(True))
    w, k = n - 1, 1 + trees.GUESSES
    sampler = SimpleNamespace(
        top_ids=torch.randint(0, vocab, (bs * w, k), generator=gen).to(device),
        top_lp=torch.log_softmax(torch.randn(bs * w, k, generator=gen), -1).to(device))
    logits = torch.randn(bs * n, vocab, generator=gen).to(device, torch.bfloat16)
    return {
        "reqs": reqs, "decode": batch(False), "blocks": torch.randint(
            0, vocab, (bs, n), generator=gen).to(device),
        "worker": SimpleNamespace(_draft_sampler=sampler),
        "mask": MaskBuffer(bs * n * (cap + n), bs, device),
        "pool": KVPool(30, bs * cap, 3 * 64 * 2, device),
        "out": (logits, torch.randn(bs * n, 5 * hidden, generator=gen).to(device,
                                                                         torch.bfloat16)),
        "positions": (torch.arange(n, device=device) + prompt).repeat(bs),
        "loc": torch.arange(bs * n, device=device, dtype=torch.int64) + prompt}


def step_fn(s: dict, timer: Timer) -> Callable[[], None]:
    """One decode step as DFLASH calls the hooks, the hooks timed by `timer`."""
    bs, n = s["blocks"].shape
    before = timer.wrap("plan+attach", hooks.before_prepare_for_verify)
    settle = timer.wrap("settle", trees.around_target_forward)
    backend = SimpleNamespace(verify_mask=s["mask"])
    runner = SimpleNamespace(attn_backend=backend, decode_cuda_graph_runner=None)
    target = SimpleNamespace(model_runner=SimpleNamespace(token_to_kv_pool=s["pool"]))
    accept = torch.ones(bs, dtype=torch.int32, device=s["blocks"].device)
    tokens = torch.zeros(bs * n, dtype=torch.int64, device=s["blocks"].device)

    def dflash(worker, batch):
        blocks = s["blocks"].clone()  # the plan writes its trees into the block in place
        verify = SimpleNamespace(draft_token=blocks.view(-1), draft_token_num=n,
                                 positions=s["positions"], custom_mask=None)  # replaced, not written
        before(verify, batch, SimpleNamespace(model_runner=runner))
        out = SimpleNamespace(logits_output=SimpleNamespace(
            next_token_logits=s["out"][0], hidden_states=s["out"][1]))
        settle(lambda *a, **k: out, target, None,
               SimpleNamespace(out_cache_loc=s["loc"]), is_verify=True)
        return SimpleNamespace(next_token_ids=tokens, accept_lens=accept,
                               speculative_num_draft_tokens=n)

    around = timer.wrap("whole step", hooks.around_forward)
    return lambda: around(dflash, s["worker"], s["decode"])


def launches(fn: Callable[[], None], steps: int) -> float:
    """Kernel launches and async copies a step, under the torch profiler (CUDA only); one of
    them is the stand-in's (the block put back)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    return sum(e.count for e in prof.key_averages() if e.key in LAUNCHES) / steps


def measure(bs: int, steps: int, device: torch.device, prompt: int = 950, n: int = 16) -> dict:
    gen = torch.Generator().manual_seed(bs)
    s = setup(bs, prompt, n, 49152, 576, device, gen)
    timer = Timer()
    fn = step_fn(s, timer)
    for _ in range(20):  # compiles and caches
        fn()
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    rows: dict[str, list[float]] = {}
    for _ in range(steps):
        timer.step = {}
        fn()
        sync()  # each step alone: the host times are of an idle queue, as at one stream
        for name, sec in timer.step.items():
            rows.setdefault(name, []).append(sec * 1e6)
    out = {"bs": bs, "steps": steps, "device": str(device),
           "host_us_p50": {k: round(statistics.median(v), 1) for k, v in rows.items()},
           "host_us_mean": {k: round(statistics.fmean(v), 1) for k, v in rows.items()}}
    out["tree_rows"] = STATE.stats["tree_rows"]  # the hooks planned every row of every step
    if device.type == "cuda":
        out["launches_per_step"] = launches(fn, 50)
    STATE.history = STATE.device_stats = None
    STATE.configure(PluginConfig(mode="off"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bs", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda":
        print(torch.cuda.get_device_name(), flush=True)
    res = [measure(bs, args.steps, device) for bs in args.bs]
    for r in res:
        print(json.dumps(r))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
