"""Open-loop arrival schedules: seeded Poisson or gamma-distributed gaps (vLLM's convention:
shape = burstiness, mean gap 1/rate; burstiness 1 is Poisson, < 1 burstier, > 1 steadier)."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator


def gaps(rate: float, burstiness: float = 1.0, seed: int = 0) -> Iterator[float]:
    """Seconds between consecutive arrivals, endlessly; the mean is 1/rate."""
    if rate <= 0 or burstiness <= 0:
        raise ValueError(f"expected rate > 0 and burstiness > 0, got {rate}, {burstiness}")
    rng = random.Random(f"turnspec-loadtest-arrivals:{seed}")
    scale = 1.0 / (rate * burstiness)
    while True:
        yield rng.gammavariate(burstiness, scale)


def schedule(rate: float, burstiness: float = 1.0, seed: int = 0,
             duration_s: float | None = None, count: int | None = None) -> Iterator[float]:
    """Arrival times in seconds from the start: the first at 0, then the gaps' running sum;
    stops before `duration_s` and after `count` arrivals (either may be None: endless)."""
    t = 0.0
    for i, gap in enumerate(itertools.chain([0.0], gaps(rate, burstiness, seed))):
        t += gap
        if (count is not None and i >= count) or (duration_s is not None and t >= duration_s):
            return
        yield t
