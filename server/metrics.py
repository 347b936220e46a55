"""Prometheus text exposition of a few real counters (the tracing issue adds spans/OTel).

Counters are plain ints bumped on the event loop (no locks: one thread); gauges are read at
scrape time from the admission queue and `Engine.stats()`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from turnspec.engine.protocol import EngineStats

# gen_ai.server.time_to_first_token buckets (OTel GenAI semconv), in seconds.
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                7.5, 10.0)


class Histogram:
    def __init__(self, buckets: tuple[float, ...]) -> None:
        self.buckets = buckets
        self.counts = [0] * len(buckets)
        self.total = 0
        self.sum = 0.0

    def observe(self, v: float) -> None:
        self.total += 1
        self.sum += v
        for i, b in enumerate(self.buckets):
            if v <= b:
                self.counts[i] += 1
                break

    def lines(self, name: str) -> list[str]:
        out, cum = [], 0
        for b, c in zip(self.buckets, self.counts, strict=True):
            cum += c
            out.append(f'{name}_bucket{{le="{b:g}"}} {cum}')
        out += [f'{name}_bucket{{le="+Inf"}} {self.total}', f"{name}_sum {self.sum:.6f}",
                f"{name}_count {self.total}"]
        return out


class Metrics:
    def __init__(self) -> None:
        self.requests: Counter[tuple[str, str]] = Counter()  # (transport, outcome)
        self.prompt_tokens = 0
        self.cached_tokens = 0
        self.completion_tokens = 0
        self.continued_turns = 0  # turns that continued a stored one (previous_response_id)
        self.ttft = Histogram(TTFT_BUCKETS)

    def finished(self, transport: str, outcome: str, prompt: int, cached: int,
                 completion: int) -> None:
        self.requests[(transport, outcome)] += 1
        self.prompt_tokens += prompt
        self.cached_tokens += cached
        self.completion_tokens += completion

    def rejected(self, transport: str, code: str) -> None:
        self.requests[(transport, code)] += 1

    def render(self, *, ready: bool, draining: bool, running: int, queued: int,
               engine_stats: Callable[[], EngineStats]) -> str:
        lines = [
            "# HELP turnspec_requests_total Turns by transport and outcome.",
            "# TYPE turnspec_requests_total counter",
        ]
        for (transport, outcome), n in sorted(self.requests.items()):
            lines.append(f'turnspec_requests_total{{transport="{transport}",'
                         f'outcome="{outcome}"}} {n}')
        lines += [
            "# TYPE turnspec_prompt_tokens_total counter",
            f"turnspec_prompt_tokens_total {self.prompt_tokens}",
            "# TYPE turnspec_cached_prompt_tokens_total counter",
            f"turnspec_cached_prompt_tokens_total {self.cached_tokens}",
            "# TYPE turnspec_completion_tokens_total counter",
            f"turnspec_completion_tokens_total {self.completion_tokens}",
            "# HELP turnspec_continued_turns_total Turns continuing a stored conversation.",
            "# TYPE turnspec_continued_turns_total counter",
            f"turnspec_continued_turns_total {self.continued_turns}",
            "# HELP turnspec_time_to_first_token_seconds Server receive -> first token sent.",
            "# TYPE turnspec_time_to_first_token_seconds histogram",
            *self.ttft.lines("turnspec_time_to_first_token_seconds"),
            "# TYPE turnspec_ready gauge", f"turnspec_ready {int(ready)}",
            "# TYPE turnspec_draining gauge", f"turnspec_draining {int(draining)}",
            "# TYPE turnspec_running_turns gauge", f"turnspec_running_turns {running}",
            "# TYPE turnspec_queued_turns gauge", f"turnspec_queued_turns {queued}",
        ]
        if ready:
            s = engine_stats()
            lines += [
                "# TYPE turnspec_engine_active_sequences gauge",
                f"turnspec_engine_active_sequences {s.active_sequences}",
                "# TYPE turnspec_engine_waiting_sequences gauge",
                f"turnspec_engine_waiting_sequences {s.waiting_sequences}",
                "# TYPE turnspec_engine_free_kv_blocks gauge",
                f"turnspec_engine_free_kv_blocks {s.free_kv_blocks}",
                "# TYPE turnspec_engine_total_kv_blocks gauge",
                f"turnspec_engine_total_kv_blocks {s.total_kv_blocks}",
                "# TYPE turnspec_engine_cached_kv_blocks gauge",
                f"turnspec_engine_cached_kv_blocks {s.cached_kv_blocks}",
            ]
        return "\n".join(lines) + "\n"
