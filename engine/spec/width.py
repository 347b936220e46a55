"""The verify width: how many blocks each greedy row verifies this step, chosen from what a verify
pass costs on this device and what more blocks are expected to commit.

A step with `greedy` rows that verify b blocks each (the chosen block and b - 1 branches) and
`others` rows that verify one (sampled rows, rows the policy paused) is expected to commit

    greedy * tau(b) + others * tau(1)   tokens   in   fixed + cost((greedy * b + others) * block)   seconds,

tau(b) being the tokens a row commits a step with b blocks (the offline replay measures it:
`turnspec speculator eval --branches b`), cost(t) a target pass over t tokens (timed on the
device) and `fixed` what the step costs besides (the drafter's pass, the host's work; left at
0 the rule leans narrow). It takes the b with the most tokens per second. Where a pass costs
about the same for 16 tokens as for 512 (a GPU at low load) one stream gets a wide tree; where
cost grows with every token (a CPU, a full GPU batch) the rule verifies one block. Ties go to
the narrower width.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Curve:
    """A measured positive function of a positive size: piecewise linear between its points, and
    along the nearest segment outside them (a single point is a constant). `xs` strictly increase."""
    xs: tuple[float, ...]
    ys: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.xs or len(self.xs) != len(self.ys):
            raise ValueError(f"a curve needs as many ys as xs, at least one: got {len(self.xs)} xs "
                             f"and {len(self.ys)} ys")
        if any(b <= a for a, b in zip(self.xs, self.xs[1:], strict=False)) or self.xs[0] <= 0:
            raise ValueError(f"xs: expected positive and strictly increasing, got {self.xs}")
        if not all(math.isfinite(y) and y > 0 for y in self.ys):
            raise ValueError(f"ys: expected finite and positive, got {self.ys}")

    @classmethod
    def of(cls, points: Sequence[tuple[float, float]]) -> Curve:
        """From (x, y) pairs in any order."""
        pts = sorted(points)
        return cls(tuple(float(x) for x, _ in pts), tuple(float(y) for _, y in pts))

    def at(self, x: float) -> float:
        xs, ys = self.xs, self.ys
        if len(xs) == 1:
            return ys[0]
        i = min(max(bisect_left(xs, x), 1), len(xs) - 1)  # the segment [i-1, i] holding x
        slope = (ys[i] - ys[i - 1]) / (xs[i] - xs[i - 1])
        return max(ys[i - 1] + slope * (x - xs[i - 1]), 1e-12)


@dataclass(frozen=True, slots=True)
class WidthRule:
    """`tau`: tokens a greedy row commits a step against the blocks it verifies; `cost`: seconds
    of one target pass against the tokens it verifies; `fixed`: seconds the step costs besides."""
    tau: Curve
    cost: Curve
    fixed: float = 0.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.fixed) and self.fixed >= 0):
            raise ValueError(f"fixed: expected finite seconds >= 0, got {self.fixed}")

    def branches(self, greedy: int, others: int, block: int, most: int) -> int:
        """Blocks each of `greedy` rows verifies (1..`most`) beside `others` one-block rows,
        blocks of `block` tokens (the anchor and the drafts)."""
        if greedy < 0 or others < 0 or block < 1 or most < 1:
            raise ValueError(f"expected greedy, others >= 0 and block, most >= 1; got greedy="
                             f"{greedy} others={others} block={block} most={most}")
        if greedy == 0:
            return 1
        settled = others * self.tau.at(1)  # tokens the one-block rows commit
        best, best_rate = 1, 0.0
        for b in range(1, most + 1):
            seconds = self.fixed + self.cost.at((greedy * b + others) * block)
            rate = (greedy * self.tau.at(b) + settled) / seconds
            if rate > best_rate * (1 + 1e-9):
                best, best_rate = b, rate
        return best
