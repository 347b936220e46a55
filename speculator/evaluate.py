"""`turnspec speculator eval`: offline greedy tau of a drafter on one or more sample sets, with
one load of the target and the drafter (tau.py holds the replay itself)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path


def evaluate_sets(data: list[Path], *, drafter: str, model_dir: str, block_size: int | None,
                  samples: int, max_len: int, device: str, with_train: bool,
                  json_out: list[Path] | None) -> Iterator[dict[str, float]]:
    """Score each set's held-out splits (and a train sample with `with_train`); yields each
    set's tau per split as soon as it is scored, and writes `json_out[i]` then, if given."""
    import torch

    from turnspec.engine.drafter import load_drafter
    from turnspec.speculator.data import read_samples
    from turnspec.speculator.target import FrozenTarget
    from turnspec.speculator.train_io import RunLog, eval_splits, resolve_device, run_evals

    if json_out is not None and len(json_out) != len(data):
        raise ValueError(f"json_out: expected one path per data set ({len(data)}), got "
                         f"{len(json_out)}")
    dev = resolve_device(device)
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    model = load_drafter(drafter, device=dev, dtype=dtype)
    target = FrozenTarget.from_model_dir(model_dir, model.config.target_layer_ids, dev, dtype)
    block = block_size or model.config.block_size
    log = RunLog(None, echo=True)
    for i, path in enumerate(data):
        splits = eval_splits(read_samples(path), samples, with_train=with_train)
        results = run_evals(model, target, splits, block, max_len, log)
        out = {"drafter": str(drafter), "data": str(path), "block_size": block,
               "tau": {k: v["tau"] for k, v in results.items()}, "eval": results}
        if json_out is not None:
            json_out[i].write_text(json.dumps(out, indent=2) + "\n")
        yield out["tau"]
