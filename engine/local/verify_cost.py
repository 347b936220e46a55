"""The measured width rule of the embedded engine (`--spec-width measured`): what a verify pass
and a drafter pass cost on this device, timed at start-up, against the drafter's τ by verify
branches, read from its folder. engine/spec/width.py turns them into blocks per row each step.

The cost is the target's forward and LM head over `rows` blocks of the serve block after a
typical context, at the row counts a step can reach. It runs before any request, on KV blocks no
sequence owns yet (they are overwritten when allocated), so it changes no answer.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import torch

from turnspec.engine.local.runner import ModelRunner
from turnspec.engine.model.attention import AttentionBatch
from turnspec.engine.spec.width import Curve

TAU_FILE = "tau-by-branches.json"  # beside the drafter's weights
ROW_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128)  # beyond: the last segment's slope (width.py)
CONTEXT = 256  # tokens before the verified block: a voice turn's prompt and history


def read_tau_curve(drafter_dir: Path) -> Curve:
    """τ by verify branches of the drafter in `drafter_dir` ({"branches": [...], "tau": [...]},
    written by scripts/analysis/tau_curve.py from the offline replay)."""
    path = Path(drafter_dir) / TAU_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path}: --spec-width measured needs the drafter's τ by verify "
                                "branches beside it; expected the file scripts/analysis/"
                                "tau_curve.py writes from `turnspec speculator eval` runs")
    doc = json.loads(path.read_text())
    try:
        return Curve.of(list(zip(doc["branches"], doc["tau"], strict=True)))
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{path}: expected {{\"branches\": [1, ...], \"tau\": [...]}} of equal "
                         f"length, τ positive; {e}") from e


@torch.inference_mode()
def verify_cost(runner: ModelRunner, block: int, most_rows: int, repeats: int = 3) -> Curve:
    """Seconds of one verify pass against the tokens it verifies, `rows * block` for rows in
    ROW_COUNTS up to `most_rows` (the best of `repeats` timings each, after one untimed pass)."""
    if block < 1 or most_rows < 1:
        raise ValueError(f"expected block >= 1 and most_rows >= 1, got {block} and {most_rows}")
    top = min(most_rows, ROW_COUNTS[-1])
    counts = sorted({r for r in ROW_COUNTS if r < top} | {top})
    return Curve.of([(rows * block, _best(runner.device, _verify_pass(runner, rows, block), repeats))
                     for rows in counts])


@torch.inference_mode()
def draft_cost(runner: ModelRunner, block: int, repeats: int = 3) -> float:
    """Seconds of one drafter pass for one row after CONTEXT tokens (the best of `repeats`, after
    one untimed pass): the width rule's `fixed`, what a step costs besides its verify. One row's
    pass is the least a step pays, so the rule stays on the narrow side for larger batches."""
    row = SimpleNamespace(token_ids=[0], num_computed=CONTEXT,  # a Sequence's fields draft reads
                          block_table=list(range(-(-CONTEXT // runner.block_size))))
    return _best(runner.device, lambda: runner.draft([row], block), repeats)


def _verify_pass(runner: ModelRunner, rows: int, block: int) -> Callable[[], None]:
    """A target pass over `rows` blocks of `block` tokens after CONTEXT tokens, its inputs built
    once; every row writes the same scratch KV blocks (the timing is the point, not the KV)."""
    bs = runner.block_size
    table = list(range(-(-(CONTEXT + block) // bs)))
    batch = AttentionBatch.build([table] * rows, [CONTEXT + block] * rows, [block] * rows, bs,
                                 runner.device)
    ids = torch.zeros(rows, block, dtype=torch.int64, device=runner.device)
    pos = torch.arange(CONTEXT, CONTEXT + block, device=runner.device).expand(rows, block)
    cos, sin = runner.rope.lookup(pos)

    def run() -> None:
        hidden, _ = runner.model(ids, cos, sin, runner.k_pools, runner.v_pools, batch,
                                 runner.tap_layers)
        runner.logits(hidden)

    return run


def _best(device: torch.device, run: Callable[[], object], repeats: int) -> float:
    """The fewest seconds `run` took in `repeats` timed calls, after one untimed call (a shape's
    first use allocates and picks its kernels)."""
    def once() -> float:
        _sync(device)
        t0 = time.perf_counter()
        run()
        _sync(device)
        return time.perf_counter() - t0

    once()
    return min(once() for _ in range(repeats))


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
