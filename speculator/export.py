"""`turnspec speculator export`: a train checkpoint, a train run folder or a drafter folder ->
a drafter folder in the z-lab / SGLang layout (engine/drafter/folder.py), with the model card
when the source is a train run."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from turnspec.engine.drafter import DFlashConfig, DFlashDrafter, load_drafter, save_drafter
from turnspec.speculator.train_config import EXPORT_DTYPES


def export_drafter(source: str | Path | None, out: str | Path, dtype: str,
                   reproduce: list[str] | None = None) -> Path:
    """Write `source` (None: the committed default drafter) to `out` in `dtype`."""
    if dtype not in EXPORT_DTYPES:
        raise ValueError(f"dtype: expected one of {sorted(EXPORT_DTYPES)}, got {dtype!r}")
    path = Path(source) if source else None
    if path is not None and path.is_dir() and (path / "checkpoint.pt").is_file() \
            and not (path / "config.json").is_file():
        path = path / "checkpoint.pt"
    drafter = from_train_checkpoint(path) if path is not None and path.is_file() \
        else load_drafter(path)                        # None -> the committed default drafter
    folder = save_drafter(drafter, out, EXPORT_DTYPES[dtype])
    metrics = path.parent / "metrics.json" if path is not None and path.is_file() else None
    if metrics is not None and metrics.is_file():      # a train run: write its card
        from turnspec.speculator.card import render_card

        (folder / "README.md").write_text(render_card(json.loads(metrics.read_text()),
                                                      reproduce))
    return folder


def from_train_checkpoint(path: Path) -> DFlashDrafter:
    """The drafter inside a `turnspec speculator train` checkpoint.pt."""
    ck = torch.load(path, map_location="cpu", weights_only=False)
    if "drafter" not in ck or "config" not in ck:
        raise ValueError(f"{path}: expected a `turnspec speculator train` checkpoint "
                         "(keys drafter, config)")
    drafter = DFlashDrafter(DFlashConfig.from_hf_dict(ck["config"]))
    drafter.load_state_dict(ck["drafter"])
    return drafter
