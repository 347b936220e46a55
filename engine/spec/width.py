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

`Pace` is the same trade chosen as served, for an engine whose step is not one pass to time
alone (SGLang's DFLASH step, bound by the host at low load): for each batch size it keeps what a
step took at each verify width, between one step's start and the next's, and what a row
committed, and each step takes the width with the most tokens a second.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field


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


@dataclass(slots=True)
class Pace:
    """The verify width of each decode step, chosen as served among `widths` (tokens a row
    verifies; width 1 is plain decode, one token a row, nothing drafted).

    Per batch-size bucket (1, 2, 3-4, 5-8, ...) and kind of step (a caller's label: a batch
    under a grammar costs the host more a node) it keeps the seconds a step takes at each width:
    from a step's start to the next decode step's start, an exponential average (`alpha`) over
    steps that followed a step of the same width and kind (the first step after a switch waits on
    its predecessor's work too). Prefills and finished requests between two steps stay in the
    gap: their cost grows with the tokens committed, so each width pays for its own. A gap over
    `outlier` times the average is dropped (the server sat idle), and one under the average
    over `outlier` replaces it (the average was such a gap). Per width, the tokens a row commits:
    1 at width 1, an average of what was committed at the others (`tau_prior` until then).
    A step takes the width with the most tokens a second (ties: the narrower); a width with no
    time yet at this bucket is tried first, and every `explore` steps of a bucket (times how
    far behind they are, up to 8) the other widths run again, each for `run` steps (the first of
    which is not timed), so the figures follow the load and the turns."""
    widths: tuple[int, ...]
    tau_prior: float = 2.0
    alpha: float = 0.2
    explore: int = 64
    run: int = 4
    outlier: float = 4.0
    seconds: dict[tuple[int, int, str], float] = field(default_factory=dict)  # width, bucket, kind
    tau: dict[int, float] = field(default_factory=dict)  # width -> tokens a row commits
    steps: Counter = field(default_factory=Counter)  # (bucket, kind) -> steps since exploring
    _queue: list[int] = field(default_factory=list)  # widths of the exploring run in flight
    _last: tuple[int, int, str, float, bool] | None = None  # width, rows, kind, start, like

    def __post_init__(self) -> None:
        if not self.widths or any(w < 1 for w in self.widths) or len(set(self.widths)) != len(
                self.widths):
            raise ValueError(f"widths: expected distinct widths >= 1, got {self.widths}")
        self.widths = tuple(sorted(self.widths))
        if not (self.tau_prior >= 1 and 0 < self.alpha <= 1 and self.explore >= 2
                and self.run >= 2 and self.outlier > 1):
            raise ValueError(f"expected tau_prior >= 1, 0 < alpha <= 1, explore >= 2, run >= 2, "
                             f"outlier > 1; got tau_prior={self.tau_prior} alpha={self.alpha} "
                             f"explore={self.explore} run={self.run} outlier={self.outlier}")

    @staticmethod
    def bucket(rows: int) -> int:
        """The power of two at or above `rows`."""
        return 1 << max(rows - 1, 0).bit_length()

    def tokens(self, width: int) -> float:
        """Tokens a row commits a step at `width`."""
        return 1.0 if width == 1 else self.tau.get(width, self.tau_prior)

    def step(self, rows: int, now: float, kind: str = "") -> int:
        """The width of a decode step of `rows` rows and `kind` starting at `now` (seconds, a
        monotonic clock); the decode step before it is timed now if it counts (see the class)."""
        if rows < 1:
            raise ValueError(f"rows: expected a decode step of >= 1 rows, got {rows}")
        last = self._last
        if last is not None and last[4]:
            self._time(last[0], last[1], last[2], now - last[3])
        width = self._choose(rows, kind)
        like = last is not None and (last[0], last[2]) == (width, kind)
        self._last = (width, rows, kind, now, like)
        return width

    def pause(self) -> None:
        """The server ran no decode step for a while (an idle batch): the gap from the last
        decode step's start is not its time."""
        self._last = None

    def committed(self, width: int, rows: int, tokens: float) -> None:
        """A step at `width` committed `tokens` over `rows` rows."""
        if width != 1 and rows > 0:
            old = self.tau.get(width)
            new = tokens / rows
            self.tau[width] = new if old is None else old + self.alpha * (new - old)

    def table(self) -> dict[str, dict]:
        """What the pace has measured, for a report: per batch bucket and kind (`B8 grammar`),
        each width's step in ms and a row's tokens a second (what the pace compares); each
        width's tokens a row."""
        steps: dict[str, dict] = {}
        for (width, bucket, kind), sec in sorted(self.seconds.items(),
                                                 key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
            cell = steps.setdefault(f"B{bucket} {kind}".strip(), {})
            cell[f"width {width}"] = {"step_ms": round(sec * 1e3, 3),
                                      "row_tok_s": round(self.tokens(width) / sec, 1)}
        return {"steps": steps, "tau": {f"width {w}": round(self.tokens(w), 3)
                                        for w in self.widths}}

    def _choose(self, rows: int, kind: str) -> int:
        if self._queue:
            return self._queue.pop()
        key = (self.bucket(rows), kind)
        self.steps[key] += 1
        rate = {w: self.tokens(w) / self.seconds[(w, *key)] for w in self.widths
                if (w, *key) in self.seconds}
        untried = [w for w in self.widths if w not in rate]
        best = max(rate, key=lambda w: (rate[w], -w), default=None)
        others = [w for w in self.widths if w != best]
        # the others again every `explore` steps, less often the further behind they are
        # (at most 8 times less: one stream's trees at 2.5x plain decode's rate lose ~1% to it)
        if untried or not others:
            due = math.inf
        else:
            due = self.explore * min(8.0, rate[best] / max(rate[w] for w in others))
        if untried or self.steps[key] >= due:
            self.steps[key] = 0
            for w in reversed(untried or others):  # the narrowest runs first
                self._queue += [w] * self.run
            return self._queue.pop()
        return best

    def _time(self, width: int, rows: int, kind: str, seconds: float) -> None:
        key = (width, self.bucket(rows), kind)
        old = self.seconds.get(key)
        if seconds <= 0 or (old is not None and seconds > self.outlier * old):
            return
        fresh = old is None or seconds * self.outlier < old
        self.seconds[key] = seconds if fresh else old + self.alpha * (seconds - old)
