"""`TrainConfig`: what `turnspec speculator train` runs, validated when it is made."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

# torch dtypes of the exported drafter, by name (TrainConfig.export_dtype)
EXPORT_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


@dataclass(slots=True, frozen=True)
class TrainConfig:
    data: Path
    model_dir: Path
    out: Path
    num_layers: int = 3
    intermediate_size: int | None = None  # the drafter's MLP width (None: the target's)
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
    grow_layers: bool = False            # init_from may have fewer layers or a narrower MLP
                                         # (train.warm_start; --grow)
    soft_weight: float = 0.0             # loss = (1-w) CE(token) + w CE(target's top-k dist.)
    soft_topk: int = 8                   # tokens kept of the target's distribution
    load_workers: int | None = None      # processes parsing the data (None: by its size)
    width_multiple: int = 32             # batch widths round up to it (few shapes on CUDA)

    def __post_init__(self) -> None:
        for name in ("num_layers", "batch_size", "anchors", "max_len", "log_every",
                     "eval_samples", "final_eval_samples", "ckpt_every", "width_multiple"):
            if getattr(self, name) < 1:
                raise ValueError(f"TrainConfig.{name}: expected >= 1, got {getattr(self, name)}")
        if self.block_size < 2 or self.epochs <= 0 or self.lr <= 0 or not 0 <= self.warmup < 1:
            raise ValueError("TrainConfig: expected block_size >= 2, epochs > 0, lr > 0 and "
                             f"0 <= warmup < 1, got {self.block_size}, {self.epochs}, {self.lr}, "
                             f"{self.warmup}")
        if not 0.0 <= self.soft_weight <= 1.0 or self.soft_topk < 1:
            raise ValueError(f"TrainConfig: expected 0 <= soft_weight <= 1 and soft_topk >= 1, "
                             f"got {self.soft_weight}, {self.soft_topk}")
        if self.load_workers is not None and self.load_workers < 1:
            raise ValueError(f"TrainConfig.load_workers: expected >= 1 or None (by the data's "
                             f"size), got {self.load_workers}")
        if self.intermediate_size is not None and self.intermediate_size < 1:
            raise ValueError(f"TrainConfig.intermediate_size: expected >= 1 or None (the "
                             f"target's), got {self.intermediate_size}")
        if self.grow_layers and self.init_from is None:
            raise ValueError("TrainConfig.grow_layers: expected init_from (the drafter to grow)")
        if self.export_dtype not in EXPORT_DTYPES:
            raise ValueError(f"TrainConfig.export_dtype={self.export_dtype!r}: expected one of "
                             f"{sorted(EXPORT_DTYPES)}")
