"""SGLang's load snapshot as EngineStats (engine/sglang_load.py).

data/sglang_v1_loads.json is a `/v1/loads` body built with SGLang 0.5.17's own `LoadSnapshot`,
passed through its msgpack codec as the scheduler writes it and the tokenizer manager reads it
back, then `to_dict()` (the figures are chosen, not measured: no SGLang runs here). The GPU
test (test_sglang_cuda_faults.py) writes a live one to $OUT/sglang_v1_loads.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from turnspec.engine.protocol import EngineStats
from turnspec.engine.sglang_load import stats_from_loads

LOADS = json.loads((Path(__file__).parent / "data" / "sglang_v1_loads.json").read_text())["loads"]


def test_one_rank() -> None:
    s = stats_from_loads(LOADS)
    # 7 running; 3 waiting + 2 waiting on their grammar; pool 1,218,560 token slots, 6,912 held
    assert s == EngineStats(active_sequences=7, waiting_sequences=5,
                            free_kv_blocks=1_218_560 - 6_912, total_kv_blocks=1_218_560,
                            cached_kv_blocks=0)


def test_ranks_add_up_and_idle_is_zero() -> None:
    idle = {**LOADS[0], "num_running_reqs": 0, "num_waiting_reqs": 0, "num_used_tokens": 0,
            "queues": None}
    s = stats_from_loads([LOADS[0], idle])
    assert (s.active_sequences, s.waiting_sequences) == (7, 5)
    assert s.total_kv_blocks == 2 * 1_218_560 and s.total_kv_blocks - s.free_kv_blocks == 6_912
    s = stats_from_loads([idle])
    assert (s.active_sequences, s.waiting_sequences, s.total_kv_blocks - s.free_kv_blocks) \
        == (0, 0, 0)


def test_what_is_not_a_load_snapshot() -> None:
    with pytest.raises(ValueError, match="got none"):
        stats_from_loads([])
    with pytest.raises(ValueError, match=r"loads\[0\]: expected integer num_used_tokens"):
        stats_from_loads([{k: v for k, v in LOADS[0].items() if k != "num_used_tokens"}])
