"""Train a DFlash drafter on target-generated data (reference/dflash.md §2).

Per step: frozen target features for a batch of whole sequences -> random anchors per
sequence (re-drawn every time a sequence is seen) -> all blocks in one drafter pass with the
block mask -> decayed CE on slots 1..B-1 against same-position labels -> AdamW, warmup +
cosine, grad clip. Everything stays on the device; the host reads numbers only every
`log_every` steps. The step that ends at a log point is timed phase by phase (`step_ms`:
batch inputs, target features, drafter forward + loss, backward, optimizer), synchronizing the
device at each boundary of that one step only, so a run's log says where its step time goes.
Outputs in `out/`: checkpoint.pt (resume), drafter/ (z-lab layout), metrics.json, train.log.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from turnspec.speculator.blocks import (
    accepted_prefix,
    block_inputs,
    block_labels,
    cosine_lr,
    decay_weights,
    sample_anchors,
)
from turnspec.speculator.config import DFlashConfig, default_gamma
from turnspec.speculator.data import PackedSplit, data_summary, read_samples
from turnspec.speculator.export import load_drafter, save_drafter
from turnspec.speculator.model import DFlashDrafter
from turnspec.speculator.target import FrozenTarget, default_mask_token_id, read_target_config
from turnspec.speculator.train_io import (
    RunLog,
    eval_splits,
    load_checkpoint,
    resolve_device,
    run_evals,
    save_checkpoint,
)

_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


@dataclass(slots=True, frozen=True)
class TrainConfig:
    data: Path
    model_dir: Path
    out: Path
    num_layers: int = 3
    block_size: int = 16
    num_taps: int = 5
    mask_token_id: int | None = None     # None: the target's MASK, else SmolLM2's id 16
    batch_size: int = 32                 # sequences per step
    anchors: int = 64                    # blocks per sequence per step
    epochs: float = 6.0
    max_steps: int | None = None
    time_budget_s: float | None = None   # caps the training loop (final eval not included)
    lr: float = 6e-4
    warmup: float = 0.04
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    gamma: float | None = None           # None: the paper's (7 for B=16)
    max_len: int = 2048
    log_every: int = 50
    eval_every: int = 0                  # steps between held-out tau evals (0: final only)
    eval_samples: int = 64               # per split during training
    final_eval_samples: int = 512        # per split at the end
    ckpt_every: int = 1000
    export_dtype: str = "bfloat16"
    device: str = "auto"
    seed: int = 0
    resume: bool = True
    progress: bool = True
    train_sources: tuple[str, ...] | None = None  # e.g. ("generic",): train on these sources only
    init_from: str | None = None         # exported drafter folder or "default": warm start

    def __post_init__(self) -> None:
        for name in ("num_layers", "batch_size", "anchors", "max_len", "log_every",
                     "eval_samples", "final_eval_samples", "ckpt_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"TrainConfig.{name}: expected >= 1, got {getattr(self, name)}")
        if self.block_size < 2 or self.epochs <= 0 or self.lr <= 0 or not 0 <= self.warmup < 1:
            raise ValueError("TrainConfig: expected block_size >= 2, epochs > 0, lr > 0 and "
                             f"0 <= warmup < 1, got {self.block_size}, {self.epochs}, {self.lr}, "
                             f"{self.warmup}")
        if self.export_dtype not in _DTYPES:
            raise ValueError(f"TrainConfig.export_dtype={self.export_dtype!r}: expected one of "
                             f"{sorted(_DTYPES)}")


def train(cfg: TrainConfig) -> dict:
    """Train, export to out/drafter, evaluate tau per held-out split; returns the metrics."""
    run = _Run(cfg)
    run.loop()
    return run.finish()


def warm_start(drafter: DFlashDrafter, source: str | Path) -> None:
    """Copy an exported drafter's weights (a folder, or "default") into `drafter`, so a new
    run continues from it (e.g. across GPU sessions: the export is 32 MB, the optimizer state
    of a checkpoint ~190 MB). Its config must match: same shapes, taps, block and MASK."""
    src = load_drafter(source, device="cpu", dtype=torch.float32)
    want, got = drafter.config.to_hf_dict(), src.config.to_hf_dict()
    diff = sorted(k for k in set(want) | set(got) if want.get(k) != got.get(k))
    if diff:
        raise ValueError(f"--init-from {source}: its config differs from this run's in "
                         f"{diff} ({ {k: got.get(k) for k in diff} } vs "
                         f"{ {k: want.get(k) for k in diff} }); pass matching --layers, "
                         "--block-size, --taps, --mask-token-id")
    drafter.load_state_dict(src.state_dict())  # copies into the run's device and dtype


def fit_total(step: int, elapsed_s: float, budget_s: float, per_step_s: float,
              planned: int) -> int:
    """Steps that fit the time budget at the current rate, never above the planned total.

    Refitted at every log point from the latest window's rate, up as well as down: slow first
    steps (warm-up, another job on the same GPU that later finishes) must not shrink the run
    for good (the 2026-11-29 H200 run stopped at 499 s of a 980 s budget that way)."""
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
            block_size=cfg.block_size, mask_token_id=mask_id, k=cfg.num_taps)
        self.target = FrozenTarget.from_model_dir(cfg.model_dir, dcfg.target_layer_ids,
                                                  self.device,
                                                  torch.bfloat16 if self.amp else torch.float32)
        self.samples = read_samples(cfg.data)
        self.data = PackedSplit.build([s for s in self.samples if s.split == "train"
                                        and (cfg.train_sources is None or s.source in cfg.train_sources)],
                                      cfg.max_len, self.device)
        self.evals = eval_splits(self.samples, cfg.eval_samples)
        self.log(f"device={self.device} target={cfg.model_dir} layers={dcfg.target_layer_ids} "
                 f"mask_token_id={mask_id} train={len(self.data)} seqs "
                 f"({self.data.num_tokens()} tokens, {self.data.truncated} truncated at "
                 f"{cfg.max_len}) eval={ {k: len(v) for k, v in self.evals.items()} }")
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
            warm_start(self.drafter, cfg.init_from)
            self.log(f"weights from {cfg.init_from} (fresh optimizer and schedule)")
        self.decay = decay_weights(dcfg.block_size, cfg.gamma or default_gamma(dcfg.block_size),
                                   self.device)
        self.n_params = sum(p.numel() for p in self.drafter.parameters())
        self.log(f"drafter {self.n_params / 1e6:.2f}M params, {dcfg.num_layers} layers, "
                 f"B={dcfg.block_size}, steps={self.state['total']} ({self.steps_per_epoch}"
                 f"/epoch), batch={cfg.batch_size} seqs x {cfg.anchors} blocks")
        self.tokens_seen = 0

    def loop(self) -> None:
        cfg, st = self.cfg, self.state
        acc = _Accum(self.dcfg.block_size, self.device)
        bar = tqdm(total=st["total"], initial=st["step"], disable=not cfg.progress,
                   desc="train", dynamic_ncols=True)
        t0, step0 = time.perf_counter() - st["elapsed_s"], st["step"]
        window = [time.perf_counter(), 0, st["step"]]             # start time, tokens, step
        self.drafter.train()
        while st["step"] < st["total"]:
            self.host_gen.set_state(st["epoch_gen"])
            for bi, (rows, width, tok) in enumerate(self.data.batches(cfg.batch_size,
                                                                      self.host_gen)):
                if bi < st["batch_in_epoch"]:
                    continue                                      # resumed mid-epoch
                if st["step"] >= st["total"]:
                    break
                lr = cosine_lr(st["step"], st["total"], max(1, int(cfg.warmup * st["total"])),
                               cfg.lr, cfg.lr * 0.1)
                logs = (st["step"] + 1) % cfg.log_every == 0 or st["step"] + 1 == st["total"]
                phases = _Phases(self.device) if logs else None   # timed: the step that logs
                self._optimize(rows, width, lr, acc, phases)
                st["step"], st["batch_in_epoch"] = st["step"] + 1, bi + 1
                self.tokens_seen += tok
                window[1] += tok
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

    def _optimize(self, rows: torch.Tensor, width: int, lr: float, acc: _Accum,
                  phases: _Phases | None) -> None:
        for g in self.opt.param_groups:
            g["lr"] = lr
        loss = _train_step(self.drafter, self.target, self.data, rows, width, self.cfg,
                           self.dcfg, self.decay, self.dev_gen, acc, self.amp, phases)
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
                 tokens_per_s=round(window[1] / dt), steps_per_s=round(steps / dt, 2))
        window[:] = [now, 0, st["step"]]
        budget = self.cfg.time_budget_s
        if budget and steps_this_run >= 10:
            per_step = dt / steps
            st["total"] = fit_total(st["step"], st["elapsed_s"], budget, per_step, self.planned)
        self.log.metrics(m)
        st["history"].append(m)

    def finish(self) -> dict:
        """Export (z-lab layout), reload as served, tau per split, metrics.json."""
        cfg, st, dtype = self.cfg, self.state, _DTYPES[self.cfg.export_dtype]
        export_dir = save_drafter(self.drafter, cfg.out / "drafter", dtype)
        served = load_drafter(export_dir, device=self.device, dtype=dtype)
        final = run_evals(served, self.target,
                          eval_splits(self.samples, cfg.final_eval_samples, with_train=True),
                          self.dcfg.block_size, cfg.max_len, self.log)
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
            "data": data_summary(cfg.data, self.samples),
            "tau": {name: r["tau"] for name, r in final.items()}, "eval": final,
            "history": st["history"], "export": str(export_dir),
        }
        (cfg.out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
        self.log(f"done: {st['step']} steps in {st['elapsed_s']:.0f}s; tau " +
                 " ".join(f"{k}={v['tau']:.3f}" for k, v in final.items()))
        return metrics


class _Phases:
    """Wall milliseconds per phase of one training step. Each boundary synchronizes the device
    (CUDA runs ahead of the host), so only the step before a log point is timed this way."""

    def __init__(self, device: torch.device) -> None:
        self.device, self.ms, self.t = device, {}, 0.0

    def _now(self) -> float:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.perf_counter()

    def start(self) -> None:
        self.t = self._now()

    def mark(self, phase: str) -> None:
        """Close `phase`: the time since start() or the previous mark."""
        now = self._now()
        self.ms[phase] = round((now - self.t) * 1e3, 2)
        self.t = now


class _Accum:
    """Device-side running sums between log points (no per-step host reads)."""

    def __init__(self, block_size: int, device: torch.device) -> None:
        self.z = lambda *s: torch.zeros(*s, device=device, dtype=torch.float64)
        self.loss, self.steps = self.z(()), 0
        self.accepted, self.blocks = self.z(()), self.z(())
        self.hits, self.slots = self.z(block_size - 1), self.z(block_size - 1)

    def read_and_reset(self) -> dict:
        hits = (self.hits / self.slots.clamp(min=1)).tolist()
        out = {"loss": round(self.loss.item() / max(1, self.steps), 4),
               "tau_block": round(1.0 + self.accepted.item() / max(1.0, self.blocks.item()), 3),
               "acc_slot1": round(hits[0], 3), "acc_slot_last": round(hits[-1], 3)}
        self.__init__(len(hits) + 1, self.loss.device)
        return out


def _train_step(drafter: DFlashDrafter, target: FrozenTarget, split: PackedSplit,
                rows: torch.Tensor, width: int, cfg: TrainConfig, dcfg: DFlashConfig,
                decay: torch.Tensor, gen: torch.Generator, acc: _Accum,
                amp: bool, phases: _Phases | None = None) -> torch.Tensor:
    """One batch -> weighted CE loss (graph attached). Metrics go to `acc` on the device."""
    if phases is not None:
        phases.start()
    ids = split.ids[rows, :width]                                         # [b, S]
    lmask = split.loss_mask[rows, :width]                                 # [b, S] bool
    anchors, valid = sample_anchors(lmask, cfg.anchors, gen)              # [b, N]
    blocks = block_inputs(ids, anchors, dcfg.block_size, dcfg.mask_token_id)
    labels, ok = block_labels(ids, lmask, anchors, valid, dcfg.block_size)  # [b, N, B]
    labels, ok = labels[..., 1:], ok[..., 1:]                             # slots 1..B-1
    if phases is not None:
        phases.mark("inputs")
    with torch.autocast(ids.device.type, dtype=torch.bfloat16, enabled=amp):
        taps = target.features(ids)                                       # [b, S, K*H]
        if phases is not None:
            phases.mark("target")
        h = drafter.forward_train(taps, target.embed(blocks), anchors)    # [b, N, B, H]
        logits = target.logits(h[:, :, 1:])                               # [b, N, B-1, V]
    ce = F.cross_entropy(logits.float().flatten(0, 2), labels.flatten(),
                         reduction="none").view_as(labels)
    w = decay[1:] * ok
    loss = (ce * w).sum() / w.sum().clamp(min=1e-6)
    with torch.no_grad():
        drafts = logits.argmax(-1)                                        # [b, N, B-1]
        hit = (drafts == labels) & ok
        acc.loss += loss.detach()
        acc.steps += 1
        acc.accepted += (accepted_prefix(drafts, labels, ok) * valid).sum()
        acc.blocks += valid.sum()
        acc.hits += hit.sum((0, 1))
        acc.slots += ok.sum((0, 1))
    if phases is not None:
        phases.mark("drafter")
    return loss
