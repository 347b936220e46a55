"""SGLang's load snapshot as our EngineStats.

SGLang's scheduler publishes a `LoadSnapshot` per data-parallel rank into shared memory (on
every prefill, every `load_snapshot_publish_interval` decode steps, 15 by default, and when it
goes idle); `tokenizer_manager.get_loads()` reads them back without a round trip to the
scheduler: what its `/v1/loads` serves, one `LoadSnapshot.to_dict()` per rank. The mapping:

| EngineStats | from the snapshot (summed over ranks) |
|---|---|
| active_sequences | `num_running_reqs` |
| waiting_sequences | `num_waiting_reqs` + `queues.grammar` (requests waiting on a grammar compile) |
| total_kv_blocks | `max_total_num_tokens`: the KV pool, in token slots |
| free_kv_blocks | `max_total_num_tokens - num_used_tokens` |
| cached_kv_blocks | 0: the snapshot does not carry the radix cache's evictable size |

So on this path one KV block is one token slot. `num_used_tokens` is SGLang's `max_total -
(available + evictable)`: the slots held by requests, radix-cache KV that nobody holds left out,
so it is 0 on an idle engine, like `used` (total - free) on the local one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from turnspec.engine.protocol import EngineStats

_REQUIRED = ("num_running_reqs", "num_waiting_reqs", "num_used_tokens", "max_total_num_tokens")


def stats_from_loads(loads: Sequence[Mapping[str, Any]]) -> EngineStats:
    """One `LoadSnapshot.to_dict()` per data-parallel rank -> EngineStats (module docstring)."""
    if not loads:
        raise ValueError("loads: expected one LoadSnapshot per data-parallel rank, got none")
    running = waiting = used = total = 0
    for i, load in enumerate(loads):
        missing = [k for k in _REQUIRED if not isinstance(load.get(k), int)]
        if missing:
            raise ValueError(f"loads[{i}]: expected integer {', '.join(missing)} (SGLang's "
                             f"LoadSnapshot), got keys {sorted(load)}")
        queues = load.get("queues") or {}
        running += load["num_running_reqs"]
        waiting += load["num_waiting_reqs"] + int(queues.get("grammar") or 0)
        used += load["num_used_tokens"]
        total += load["max_total_num_tokens"]
    return EngineStats(active_sequences=running, waiting_sequences=waiting,
                       free_kv_blocks=max(total - used, 0), total_kv_blocks=total,
                       cached_kv_blocks=0)
