"""Where the drafter's block first goes wrong, and how far the target's token was from the
drafter's guess there: what any choice of verify branches could recover.

usage: python scripts/analysis/miss_rank.py SAMPLES [--source independent-generic] [--n 40]
           [--drafter default] [--block-size 16] [--device cpu] [--json OUT]

Replays `--n` turns of one source as `turnspec speculator eval` does (the drafter's own block
every step, no lookup: `speculator.tau.replay_steps`). At each step's first mismatch between
the drafter's block and the target's answer it records the mismatch's position in the block
and the rank of the target's token in the drafter's distribution there (2 = the drafter's
second guess). A branch that swaps one token can only help where that rank is small: with
ranks above 10 no tree built from the drafter's top guesses reaches the target's token, and
only a better drafter (or a lookup source) can.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Callable

import torch
from torch import Tensor

from turnspec.engine.drafter.model import DFlashDrafter
from turnspec.speculator.data import Sample
from turnspec.speculator.evaluate import add_replay_arguments, replay_inputs
from turnspec.speculator.target import FrozenTarget
from turnspec.speculator.tau import replay_context, replay_order, replay_steps

RANK_BUCKETS = ("2", "3", "4", "5-10", ">10")


def rank_bucket(rank: int) -> str:
    """A rank of the target's token (2 or more: rank 1 would not be a mismatch) -> its bucket."""
    if rank < 2:
        raise ValueError(f"rank {rank}: expected 2 or more at a mismatch")
    return str(rank) if rank <= 4 else ("5-10" if rank <= 10 else ">10")


class MissTally:
    """A `replay_steps` pick that keeps the drafter's block and tallies its first mismatch."""

    def __init__(self, ids: Tensor, end: Tensor) -> None:
        self.ids, self.end = ids, end
        self.ranks: Counter[str] = Counter()
        self.positions: Counter[int] = Counter()
        self.steps = 0

    def __call__(self, drafts: Tensor, logits: Tensor, anchor: Tensor, active: Tensor,
                 accepted_of: Callable[[Tensor], Tensor]) -> Tensor:
        b, w = drafts.shape
        rows = torch.arange(b, device=drafts.device)
        first = accepted_of(drafts).clamp(max=w - 1)            # [b] the first mismatch, if any
        pos = anchor + 1 + first
        truth = self.ids.gather(1, pos.clamp(max=self.ids.shape[1] - 1)[:, None])[:, 0]
        at = logits[rows, first].float()                        # [b, V] the drafter there
        rank = 1 + (at > at.gather(1, truth[:, None])).sum(-1)
        # a mismatch: the row is live, its block not all accepted and the answer not ended there
        miss = active & (drafts[rows, first] != truth) & (pos <= self.end)
        self.steps += int(active.sum())
        for r, m in zip(rank[miss].tolist(), first[miss].tolist(), strict=True):
            self.ranks[rank_bucket(r)] += 1
            self.positions[m] += 1
        return drafts


def tally(drafter: DFlashDrafter, target: FrozenTarget, samples: list[Sample], blk: int,
          batch_size: int = 16, max_len: int = 2048) -> dict:
    """Steps, and first mismatches by rank bucket and by position, over the turns."""
    ranks: Counter[str] = Counter()
    positions: Counter[int] = Counter()
    steps = 0
    drafter.eval()
    seqs = replay_order(samples, max_len)
    for i in range(0, len(seqs), batch_size):
        batch = seqs[i : i + batch_size]
        context = replay_context(drafter, target, batch, max_len, blk)
        pick = MissTally(context.ids, context.end)
        for _ in replay_steps(drafter, target, batch, blk, max_len, context, pick=pick):
            pass
        ranks.update(pick.ranks)
        positions.update(pick.positions)
        steps += pick.steps
    return {"turns": len(seqs), "steps": steps, "mismatches": sum(ranks.values()),
            "rank": {b: ranks[b] for b in RANK_BUCKETS},
            "position": {str(p): positions[p] for p in sorted(positions)}}


def report(out: dict) -> str:
    n = max(out["mismatches"], 1)
    lines = [f"{out['turns']} turns, {out['steps']} steps, {out['mismatches']} with a mismatch",
             "rank of the target's token at the first mismatch: " + ", ".join(
                 f"{b}: {out['rank'][b]} ({100 * out['rank'][b] / n:.1f}%)" for b in RANK_BUCKETS),
             "first mismatch at block position: " + ", ".join(
                 f"{p}: {c}" for p, c in out["position"].items())]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_replay_arguments(p, source="independent-generic", n=40)
    args = p.parse_args()
    turns, drafter, target = replay_inputs(args)
    dev = target.device
    out = tally(drafter, target, turns, args.block_size,
                batch_size=128 if dev.type == "cuda" else 16)
    print(report(out))
    if args.json:
        args.json.write_text(json.dumps({"samples": str(args.samples), "source": args.source,
                                         "drafter": args.drafter, "block_size": args.block_size,
                                         **out}, indent=2) + "\n")


if __name__ == "__main__":
    main()
