"""A live progress line on stderr (rich): turns done, errors, running TTFT p50."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from turnspec.loadtest.record import RequestRecord
from turnspec.loadtest.stats import percentile


class LiveProgress:
    """Counts turns against --requests, or seconds against --duration."""

    def __init__(self, label: str, requests: int | None, duration_s: float | None,
                 enabled: bool = True) -> None:
        self.enabled = enabled
        self.requests = requests
        self.duration_s = duration_s
        self.ok = self.errors = 0
        self._ttfts: list[float] = []
        self._t0 = self._shown = 0.0
        self._progress: Progress | None = None
        self._task: Any = None
        self.label = label

    def start(self) -> None:
        self._t0 = time.perf_counter()
        if not self.enabled:
            return
        self._progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                  TimeElapsedColumn(), TextColumn("{task.fields[stats]}"),
                                  console=Console(stderr=True), refresh_per_second=2)
        total = self.requests if self.requests is not None else self.duration_s
        self._task = self._progress.add_task(self.label, total=total, stats="")
        self._progress.start()

    def update(self, rec: RequestRecord) -> None:
        if rec.ok:
            self.ok += 1
            if rec.ttft_ms is not None and len(self._ttfts) < 100_000:
                self._ttfts.append(rec.ttft_ms)
        else:
            self.errors += 1
        now = time.perf_counter()
        if self._progress is None or now - self._shown < 0.5:  # sorting costs: twice a second
            return
        self._shown = now
        done = self.ok + self.errors
        ttft = f"  TTFT p50 {percentile(self._ttfts, 50):.1f} ms" if self._ttfts else ""
        completed = done if self.requests is not None else min(
            now - self._t0, self.duration_s or 0.0)
        self._progress.update(self._task, completed=completed,
                              stats=f"{done} turns, {self.errors} errors{ttft}")

    def stop(self) -> None:
        if self._progress is not None:
            done = self.ok + self.errors
            self._progress.update(self._task, completed=done if self.requests is not None
                                  else self.duration_s, stats=f"{done} turns, {self.errors} errors")
            self._progress.stop()
            self._progress = None
