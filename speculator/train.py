"""Train a DFlash drafter on target-generated data (reference/dflash.md §2).

Per step: frozen target features for a batch of whole sequences -> random anchors per
sequence (re-drawn every time a sequence is seen) -> all blocks in one drafter pass with the
block mask -> decayed CE on slots 1..B-1 against same-position labels -> AdamW, warmup +
cosine, grad clip. Everything stays on the device; the host reads numbers only every
`log_every` steps. Outputs in `out/`: checkpoint.pt (resume), drafter/ (z-lab layout),
metrics.json, train.log.
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
from turnspec.speculator.data import PackedSplit, read_samples
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
    max_len: int = 1024
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
    cfg.out.mkdir(parents=True, exist_ok=True)
    log = RunLog(cfg.out / "train.log", cfg.progress)
    device = resolve_device(cfg.device)
    amp = device.type == "cuda"
    target_cfg = read_target_config(cfg.model_dir)
    mask_id = cfg.mask_token_id if cfg.mask_token_id is not None else \
        default_mask_token_id(cfg.model_dir)
    dcfg = DFlashConfig.for_target(target_cfg, num_layers=cfg.num_layers,
                                   block_size=cfg.block_size, mask_token_id=mask_id,
                                   k=cfg.num_taps)
    target = FrozenTarget.from_model_dir(cfg.model_dir, dcfg.target_layer_ids, device,
                                         torch.bfloat16 if amp else torch.float32)
    samples = read_samples(cfg.data)
    train_split = PackedSplit.build([s for s in samples if s.split == "train"], cfg.max_len,
                                    device)
    evals = eval_splits(samples, cfg.eval_samples)
    log(f"device={device} target={cfg.model_dir} layers={dcfg.target_layer_ids} "
        f"mask_token_id={mask_id} train={len(train_split)} seqs "
        f"({train_split.num_tokens()} tokens, {train_split.truncated} truncated at "
        f"{cfg.max_len}) eval={ {k: len(v) for k, v in evals.items()} }")

    torch.manual_seed(cfg.seed)
    drafter = DFlashDrafter(dcfg).to(device)
    opt = torch.optim.AdamW(drafter.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay,
                            fused=amp)
    steps_per_epoch = math.ceil(len(train_split) / cfg.batch_size)
    total = max(1, int(steps_per_epoch * cfg.epochs))
    if cfg.max_steps:
        total = min(total, cfg.max_steps)
    host_gen = torch.Generator().manual_seed(cfg.seed)
    dev_gen = torch.Generator(device).manual_seed(cfg.seed + 1)
    state = {"step": 0, "epoch": 0, "batch_in_epoch": 0, "total": total, "elapsed_s": 0.0,
             "history": [], "epoch_gen": host_gen.get_state()}
    ckpt_path = cfg.out / "checkpoint.pt"
    if cfg.resume and ckpt_path.is_file():
        state = load_checkpoint(ckpt_path, drafter, opt, dev_gen, dcfg)
        log(f"resumed at step {state['step']}/{state['total']} (epoch {state['epoch']})")

    decay = decay_weights(dcfg.block_size, cfg.gamma or default_gamma(dcfg.block_size), device)
    n_params = sum(p.numel() for p in drafter.parameters())
    log(f"drafter {n_params / 1e6:.2f}M params, {dcfg.num_layers} layers, B={dcfg.block_size}, "
        f"steps={state['total']} ({steps_per_epoch}/epoch), batch={cfg.batch_size}x"
        f"{cfg.anchors} blocks")
    acc = _Accum(dcfg.block_size, device)
    bar = tqdm(total=state["total"], initial=state["step"], disable=not cfg.progress,
               desc="train", dynamic_ncols=True)
    t0, step0, tokens_seen = time.perf_counter() - state["elapsed_s"], state["step"], 0
    t_window, tok_window = time.perf_counter(), 0
    drafter.train()
    while state["step"] < state["total"]:
        host_gen.set_state(state["epoch_gen"])
        for bi, (rows, width, tok) in enumerate(train_split.batches(cfg.batch_size, host_gen)):
            if bi < state["batch_in_epoch"]:
                continue
            if state["step"] >= state["total"]:
                break
            lr = cosine_lr(state["step"], state["total"],
                           max(1, int(cfg.warmup * state["total"])), cfg.lr, cfg.lr * 0.1)
            for g in opt.param_groups:
                g["lr"] = lr
            loss = _train_step(drafter, target, train_split, rows, width, cfg, dcfg, decay,
                               dev_gen, acc, amp)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(drafter.parameters(), cfg.grad_clip)
            opt.step()
            state["step"] += 1
            state["batch_in_epoch"] = bi + 1
            tokens_seen += tok
            tok_window += tok
            bar.update(1)
            step = state["step"]
            if step % cfg.log_every == 0 or step == state["total"]:
                m = acc.read_and_reset()                                  # host sync
                now = time.perf_counter()
                state["elapsed_s"] = now - t0
                m.update(step=step, lr=lr, elapsed_s=round(state["elapsed_s"], 1),
                         tokens_per_s=round(tok_window / (now - t_window)),
                         steps_per_s=round(cfg.log_every / (now - t_window), 2))
                t_window, tok_window = now, 0
                if cfg.time_budget_s and step - step0 >= 10:
                    per_step = state["elapsed_s"] / step
                    cap = step + int((cfg.time_budget_s - state["elapsed_s"]) / per_step)
                    state["total"] = max(step, min(state["total"], cap))
                    bar.total = state["total"]
                log.metrics(m)
                state["history"].append(m)
            if cfg.eval_every and step % cfg.eval_every == 0 and step < state["total"]:
                state["history"].append({"step": step, "eval": run_evals(
                    drafter, target, evals, dcfg.block_size, cfg.max_len, log)})
            if step % cfg.ckpt_every == 0:
                state["elapsed_s"] = time.perf_counter() - t0
                save_checkpoint(ckpt_path, drafter, opt, dev_gen, dcfg, state)
        else:
            state["epoch"] += 1
            state["batch_in_epoch"] = 0
            state["epoch_gen"] = host_gen.get_state()
    bar.close()
    state["elapsed_s"] = time.perf_counter() - t0
    save_checkpoint(ckpt_path, drafter, opt, dev_gen, dcfg, state)
    train_s = state["elapsed_s"]
    export_dir = save_drafter(drafter, cfg.out / "drafter", _DTYPES[cfg.export_dtype])
    served = load_drafter(export_dir, device=device, dtype=_DTYPES[cfg.export_dtype])
    final_evals = eval_splits(samples, cfg.final_eval_samples, with_train=True)
    final = run_evals(served, target, final_evals, dcfg.block_size, cfg.max_len, log)
    metrics = {
        "config": {k: str(v) if isinstance(v, Path) else v
                   for k, v in dataclasses.asdict(cfg).items()},
        "drafter": dcfg.to_hf_dict(), "params": n_params, "device": str(device),
        "steps": state["step"], "epochs": round(state["step"] / steps_per_epoch, 2),
        "train_seconds": round(train_s, 1),
        "tokens_per_s": round(tokens_seen / max(1e-9, train_s)),
        "train_sequences": len(train_split), "train_tokens": train_split.num_tokens(),
        "tau": {name: r["tau"] for name, r in final.items()}, "eval": final,
        "history": state["history"], "export": str(export_dir),
    }
    (cfg.out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    log(f"done: {state['step']} steps in {train_s:.0f}s; tau " +
        " ".join(f"{k}={v['tau']:.3f}" for k, v in final.items()))
    return metrics


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
                amp: bool) -> torch.Tensor:
    """One batch -> weighted CE loss (graph attached). Metrics go to `acc` on the device."""
    ids = split.ids[rows, :width]                                         # [b, S]
    lmask = split.loss_mask[rows, :width]                                 # [b, S] bool
    anchors, valid = sample_anchors(lmask, cfg.anchors, gen)              # [b, N]
    blocks = block_inputs(ids, anchors, dcfg.block_size, dcfg.mask_token_id)
    labels, ok = block_labels(ids, lmask, anchors, valid, dcfg.block_size)  # [b, N, B]
    labels, ok = labels[..., 1:], ok[..., 1:]                             # slots 1..B-1
    with torch.autocast(ids.device.type, dtype=torch.bfloat16, enabled=amp):
        taps = target.features(ids)                                       # [b, S, K*H]
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
    return loss
