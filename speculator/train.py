"""Train a DFlash drafter on target-generated data (docs/drafter-training.md).

The run: setup (target, packed data, drafter, warm start or resume) -> steps (one step's math
is `train_step.py`: frozen target features, random anchors re-drawn every time a sequence is
seen, all blocks in one drafter pass, decayed CE against same-position labels, optionally
mixed with the target's own top-k distribution, `soft_labels.py`) -> AdamW, warmup + cosine,
grad clip. Everything stays on the device; the host reads numbers only at log points, and the
step that ends at one is timed phase by phase (`step_ms`: batch inputs, target features,
drafter forward + loss, backward, optimizer), so a run's log says where its step time goes.
Outputs in `out/`: checkpoint.pt (resume), drafter/ (z-lab layout), metrics.json, train.log.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from pathlib import Path

import torch
from tqdm import tqdm

from turnspec.engine.drafter.config import DFlashConfig, default_gamma
from turnspec.engine.drafter.folder import load_drafter, save_drafter
from turnspec.engine.drafter.model import DFlashDrafter
from turnspec.speculator.blocks import cosine_lr, decay_weights
from turnspec.speculator.data import Batch, data_summary
from turnspec.speculator.data_load import load_train_data, load_workers
from turnspec.speculator.target import FrozenTarget, default_mask_token_id, read_target_config
from turnspec.speculator.train_config import EXPORT_DTYPES, TrainConfig
from turnspec.speculator.train_io import (
    RunLog,
    eval_splits,
    load_checkpoint,
    resolve_device,
    run_evals,
    save_checkpoint,
    spread_indices,
)
from turnspec.speculator.train_step import StepMetrics, StepPhases, StepSpec, train_step

# With a time budget the step total (and so the warmup, a share of it) is only known once the
# step rate is: the first log point comes after this many steps of a run, whatever log_every
# says. Before, it came at log_every: an H200 run spent its first 100 of 2,612 steps at
# lr ~3e-6, its warmup sized for the 558,800 steps of `--epochs 200`, then jumped to the peak
# (docs/history/notes/run11-soft-labels.md).
_FIRST_FIT = 20

def train(cfg: TrainConfig) -> dict:
    """Train, export to out/drafter, evaluate tau per held-out split; returns the metrics."""
    run = _Run(cfg)
    run.loop()
    return run.finish()


# the config keys that differ between a drafter and the same drafter with more layers or a
# wider MLP
_GROW_KEYS = {"num_hidden_layers", "layer_types", "max_window_layers", "intermediate_size"}


def warm_start(drafter: DFlashDrafter, source: str | Path, grow: bool = False) -> None:
    """Copy an exported drafter's weights (a folder, or "default") into `drafter`, so a new
    run continues from it (e.g. across GPU sessions: the export is 32 MB, the optimizer state
    of a checkpoint ~190 MB). Its config must match: same shapes, taps, block and MASK.

    grow: `drafter` may have more layers, or a wider MLP, than the source; it starts as the
    source's function (a bigger drafter compared with today's at equal GPU time, not from random
    weights). The source's layers fill the first ones; each added layer keeps its random weights
    except its two output projections (attention o_proj, MLP down_proj), which start at zero, so
    it adds nothing to the residual stream. In a wider MLP the source's units come first and the
    added units keep random gate/up rows but zero down_proj columns: they output nothing yet."""
    src = load_drafter(source, device="cpu", dtype=torch.float32)
    want, got = drafter.config.to_hf_dict(), src.config.to_hf_dict()
    diff = sorted(k for k in set(want) | set(got) if want.get(k) != got.get(k))
    n_src, n_new = len(src.layers), len(drafter.layers)
    w_src, w_new = src.config.intermediate_size, drafter.config.intermediate_size
    if grow and (n_src > n_new or w_src > w_new):
        raise ValueError(f"--init-from {source} --grow: the source has {n_src} layers and an "
                         f"MLP of {w_src}, this run {n_new} and {w_new}; expected --layers >= "
                         f"{n_src} and --intermediate-size >= {w_src}")
    if grow:
        diff = [k for k in diff if k not in _GROW_KEYS]
    if diff:
        raise ValueError(f"--init-from {source}: its config differs from this run's in "
                         f"{diff} ({ {k: got.get(k) for k in diff} } vs "
                         f"{ {k: want.get(k) for k in diff} }); pass matching --layers, "
                         "--intermediate-size, --block-size, --taps, --mask-token-id"
                         + ("" if grow else " (or --grow for more layers or a wider MLP)"))
    if not grow:
        drafter.load_state_dict(src.state_dict())
        return
    own, theirs = drafter.state_dict(), src.state_dict()   # own: the parameters' storage
    assert theirs.keys() <= own.keys()
    assert all(k.startswith("layers.") for k in own.keys() - theirs.keys())
    with torch.no_grad():
        for name, w in theirs.items():
            dst = own[name]
            if name.endswith("down_proj.weight"):            # [hidden, units]: added columns 0
                dst.zero_()
                dst[:, : w.shape[1]].copy_(w)
            else:   # gate/up [units, hidden] fill a prefix; every other tensor, all of it
                dst[: w.shape[0]].copy_(w)
        for layer in drafter.layers[n_src:]:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()


def fit_total(step: int, elapsed_s: float, budget_s: float, per_step_s: float,
              planned: int) -> int:
    """Steps that fit the time budget at the current rate, never above the planned total.

    Refitted at every log point from the latest window's rate, up as well as down: slow first
    steps (warm-up, another job on the same GPU that later finishes) must not shrink the run
    for good (an early H200 run stopped at 499 s of a 980 s budget that way;
    docs/history/notes/drafter-run2-and-cpu-spec.md)."""
    cap = step + int(max(0.0, budget_s - elapsed_s) / max(per_step_s, 1e-9))
    return max(step, min(planned, cap))


class _Run:
    """One training run: setup (resume included), the step loop, export + final eval."""

    def __init__(self, cfg: TrainConfig) -> None:
        cfg.out.mkdir(parents=True, exist_ok=True)
        self.cfg, self.log = cfg, RunLog(cfg.out / "train.log", cfg.progress)
        self.device = resolve_device(cfg.device)
        self.amp = self.device.type == "cuda"
        mask_id = cfg.mask_token_id if cfg.mask_token_id is not None else \
            default_mask_token_id(cfg.model_dir)
        self.dcfg = dcfg = DFlashConfig.for_target(
            read_target_config(cfg.model_dir), num_layers=cfg.num_layers,
            block_size=cfg.block_size, mask_token_id=mask_id, k=cfg.num_taps,
            intermediate_size=cfg.intermediate_size)
        self.target = FrozenTarget.from_model_dir(cfg.model_dir, dcfg.target_layer_ids,
                                                  self.device,
                                                  torch.bfloat16 if self.amp else torch.float32)
        workers = load_workers(cfg.data, cfg.load_workers)
        self.loaded = load_train_data(cfg.data, cfg.max_len, self.device, cfg.train_sources,
                                      workers)
        self.data = self.loaded.train
        self.evals = eval_splits(self.loaded.heldout, cfg.eval_samples)
        self.log(f"device={self.device} target={cfg.model_dir} layers={dcfg.target_layer_ids} "
                 f"mask_token_id={mask_id} train={len(self.data)} seqs "
                 f"({self.data.num_tokens()} tokens, {self.data.truncated} truncated at "
                 f"{cfg.max_len}; read by {workers} process{'es' if workers > 1 else ''}) "
                 f"eval={ {k: len(v) for k, v in self.evals.items()} }")
        torch.manual_seed(cfg.seed)
        self.drafter = DFlashDrafter(dcfg).to(self.device)
        self.opt = torch.optim.AdamW(self.drafter.parameters(), lr=cfg.lr,
                                     weight_decay=cfg.weight_decay, fused=self.amp)
        self.steps_per_epoch = math.ceil(len(self.data) / cfg.batch_size)
        total = max(1, int(self.steps_per_epoch * cfg.epochs))
        total = min(total, cfg.max_steps) if cfg.max_steps else total
        self.host_gen = torch.Generator().manual_seed(cfg.seed)
        self.dev_gen = torch.Generator(self.device).manual_seed(cfg.seed + 1)
        self.planned = total                 # epochs / max_steps; a time budget only lowers it
        self.state = {"step": 0, "epoch": 0, "batch_in_epoch": 0, "total": total,
                      "elapsed_s": 0.0, "history": [], "epoch_gen": self.host_gen.get_state()}
        self.ckpt = cfg.out / "checkpoint.pt"
        if cfg.resume and self.ckpt.is_file():
            self.state = load_checkpoint(self.ckpt, self.drafter, self.opt, self.dev_gen, dcfg)
            self.log(f"resumed at step {self.state['step']}/{self.state['total']}")
        elif cfg.init_from is not None:
            warm_start(self.drafter, cfg.init_from, grow=cfg.grow_layers)
            self.log(f"weights from {cfg.init_from} (fresh optimizer and schedule"
                     f"{'; grown: added layers and MLP units start silent' if cfg.grow_layers else ''})")
        self.decay = decay_weights(dcfg.block_size, cfg.gamma or default_gamma(dcfg.block_size),
                                   self.device)
        self.step_spec = StepSpec(anchors=cfg.anchors, block_size=dcfg.block_size,
                                  mask_token_id=dcfg.mask_token_id, soft_weight=cfg.soft_weight,
                                  soft_topk=cfg.soft_topk, amp=self.amp)
        self.n_params = sum(p.numel() for p in self.drafter.parameters())
        self.log(f"drafter {self.n_params / 1e6:.2f}M params, {dcfg.num_layers} layers, "
                 f"B={dcfg.block_size}, steps={self.state['total']} ({self.steps_per_epoch}"
                 f"/epoch), batch={cfg.batch_size} seqs x {cfg.anchors} blocks")
        self.tokens_seen = 0

    def loop(self) -> None:
        cfg, st = self.cfg, self.state
        acc = StepMetrics(self.dcfg.block_size, self.device)
        bar = tqdm(total=st["total"], initial=st["step"], disable=not cfg.progress,
                   desc="train", dynamic_ncols=True)
        t0, step0 = time.perf_counter() - st["elapsed_s"], st["step"]
        window = [time.perf_counter(), 0, st["step"], time.process_time()]  # + CPU seconds
        self.drafter.train()
        while st["step"] < st["total"]:
            self.host_gen.set_state(st["epoch_gen"])
            batches = self.data.batches(cfg.batch_size, self.host_gen, cfg.width_multiple)
            for bi, batch in enumerate(batches):
                if bi < st["batch_in_epoch"]:
                    continue                                      # resumed mid-epoch
                if cfg.time_budget_s is not None and 0 < st["step"] - step0 < _FIRST_FIT \
                        and time.perf_counter() - t0 > cfg.time_budget_s:
                    st["total"] = st["step"]  # spent before the first fit (slow steps, e.g. a
                    # CPU, reach step 20 only after many budgets); after it, each log point refits
                if st["step"] >= st["total"]:
                    break
                lr = cosine_lr(st["step"], st["total"], max(1, int(cfg.warmup * st["total"])),
                               cfg.lr, cfg.lr * 0.1)
                logs = (st["step"] + 1) % cfg.log_every == 0 or st["step"] + 1 == st["total"] \
                    or (cfg.time_budget_s is not None and st["step"] + 1 - step0 == _FIRST_FIT)
                phases = StepPhases(self.device) if logs else None   # timed: the step that logs
                self._optimize(batch, lr, acc, phases)
                st["step"], st["batch_in_epoch"] = st["step"] + 1, bi + 1
                self.tokens_seen += batch.tokens
                window[1] += batch.tokens
                bar.update(1)
                step = st["step"]
                if phases is not None:                            # this step logs
                    st["elapsed_s"] = time.perf_counter() - t0
                    m = {**acc.read_and_reset(), "step_ms": phases.ms}
                    self._log_point(m, lr, window, step - step0)  # sync
                    bar.total = st["total"]
                if cfg.eval_every and step % cfg.eval_every == 0 and step < st["total"]:
                    st["history"].append({"step": step, "eval": run_evals(
                        self.drafter, self.target, self.evals, self.dcfg.block_size,
                        cfg.max_len, self.log)})
                if step % cfg.ckpt_every == 0:
                    st["elapsed_s"] = time.perf_counter() - t0
                    save_checkpoint(self.ckpt, self.drafter, self.opt, self.dev_gen, self.dcfg,
                                    st)
            else:
                st["epoch"], st["batch_in_epoch"] = st["epoch"] + 1, 0
                st["epoch_gen"] = self.host_gen.get_state()
        bar.close()
        st["elapsed_s"] = time.perf_counter() - t0
        save_checkpoint(self.ckpt, self.drafter, self.opt, self.dev_gen, self.dcfg, st)

    def _optimize(self, batch: Batch, lr: float, acc: StepMetrics, phases: StepPhases | None) -> None:
        for g in self.opt.param_groups:
            g["lr"] = lr
        loss = train_step(self.drafter, self.target, self.data, batch, self.step_spec,
                          self.decay, self.dev_gen, acc, phases)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        if phases is not None:
            phases.mark("backward")
        torch.nn.utils.clip_grad_norm_(self.drafter.parameters(), self.cfg.grad_clip)
        self.opt.step()
        if phases is not None:
            phases.mark("optimizer")

    def _log_point(self, m: dict, lr: float, window: list, steps_this_run: int) -> None:
        """Log metrics and throughput; with a time budget, fit the step total to it."""
        st, now = self.state, time.perf_counter()
        dt, steps = now - window[0], max(1, st["step"] - window[2])
        m.update(step=st["step"], lr=round(lr, 7), elapsed_s=round(st["elapsed_s"], 1),
                 tokens_per_s=round(window[1] / dt), steps_per_s=round(steps / dt, 2),
                 # this process's CPU seconds per wall second, and the host's 1-minute load
                 # (on the H200: 1.0 throughout, the host idle otherwise, the first steps still
                 # slow; docs/history/notes/run17-fast-load.md)
                 host_cpu=round((time.process_time() - window[3]) / dt, 2),
                 load1=round(os.getloadavg()[0], 1))
        if self.amp:
            # training started slow while the GPU's memory in use swung 52-136 GB (notes
            # docs/history/notes/run15-goal-dose.md): the caching
            # allocator freeing everything and retrying at the cap would show here
            mem = torch.cuda.memory_stats(self.device)
            m.update(alloc_retries=mem.get("num_alloc_retries", 0),
                     reserved_gb=round(mem.get("reserved_bytes.all.current", 0) / 2**30, 1))
        window[:] = [now, 0, st["step"], time.process_time()]
        budget = self.cfg.time_budget_s
        if budget and steps_this_run >= 10:
            per_step = dt / steps
            st["total"] = fit_total(st["step"], st["elapsed_s"], budget, per_step, self.planned)
        self.log.metrics(m)
        st["history"].append(m)

    def finish(self) -> dict:
        """Export (z-lab layout), reload as served, tau per split, metrics.json."""
        cfg, st, dtype = self.cfg, self.state, EXPORT_DTYPES[self.cfg.export_dtype]
        export_dir = save_drafter(self.drafter, cfg.out / "drafter", dtype)
        served = load_drafter(export_dir, device=self.device, dtype=dtype)
        sets = eval_splits(self.loaded.heldout, cfg.final_eval_samples)
        sets["train-sample"] = self.loaded.train_rows(
            spread_indices(len(self.data), cfg.final_eval_samples))
        final = run_evals(served, self.target, sets, self.dcfg.block_size, cfg.max_len,
                          self.log)
        metrics = {
            "config": {k: str(v) if isinstance(v, Path) else v
                       for k, v in dataclasses.asdict(cfg).items()},
            "drafter": self.dcfg.to_hf_dict(), "params": self.n_params,
            "device": torch.cuda.get_device_name(self.device) if self.device.type == "cuda"
            else "cpu",
            "steps": st["step"], "epochs": round(st["step"] / self.steps_per_epoch, 2),
            "train_seconds": round(st["elapsed_s"], 1),
            "tokens_per_s": round(self.tokens_seen / max(1e-9, st["elapsed_s"])),
            "train_sequences": len(self.data), "train_tokens": self.data.num_tokens(),
            "data": data_summary(cfg.data, self.loaded.counts),
            "tau": {name: r["tau"] for name, r in final.items()}, "eval": final,
            "history": st["history"], "export": str(export_dir),
        }
        (cfg.out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
        self.log(f"done: {st['step']} steps in {st['elapsed_s']:.0f}s; tau " +
                 " ".join(f"{k}={v['tau']:.3f}" for k, v in final.items()))
        return metrics
