"""scripts/gpu/plugin_host.py on the CPU (the kernels' torch references): the plugin's hooks run
a trees step as DFLASH calls them, planning every greedy row, and each hooked part is timed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("plugin_host", ROOT / "scripts/gpu/plugin_host.py")
ph = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ph)


def test_a_step_of_trees_runs_through_the_hooks_and_is_timed_by_part() -> None:
    out = ph.measure(bs=2, steps=3, device=torch.device("cpu"), prompt=40, n=8)
    assert out["tree_rows"] == 2 * (20 + 3)  # warm-up and timed steps, every row planned
    parts = out["host_us_p50"]
    assert set(parts) == {"plan+attach", "settle", "whole step"}
    assert 0 < parts["plan+attach"] + parts["settle"] <= parts["whole step"]
