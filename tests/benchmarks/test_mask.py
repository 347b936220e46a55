"""`turnspec bench mask` runs end to end on the real tokenizer and reports every figure it promises."""

from __future__ import annotations

import json
from pathlib import Path

from turnspec.cli.main import main


def test_bench_mask_cli_writes_table_and_json(smollm2_dir: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "mask.json"
    assert main(["bench", "mask", "--model", str(smollm2_dir), "--block-size", "4", "--calls", "3", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["vocab_size"] == 49152 and result["block_size"] == 4 and result["date"]
    assert set(result["compile"]) == {"auto", "required", "function"}
    assert all(c["cold_ms"]["p50"] > 0 and c["cached_us"]["p50"] > 0 for c in result["compile"].values())
    for key in ("token_call", "token_text_auto"):
        assert result[key]["fill_plus_accept_us"]["n"] > 10 and result[key]["fill_plus_accept_us"]["mean"] > 0
    block = result["verify_block_call"]
    assert block["all_accepted"]["n"] > 0 and block["per_position_us"] == block["all_accepted"]["mean"] / 4
    assert result["apply_cpu"]["with_copy"]["n"] == 200
    batch = result["batch_cpu"]
    assert set(batch) == {"1", "16", "64", "256"}
    assert all(x[k]["n"] >= 10 and x[k]["p50"] > 0 for x in batch.values() for k in ("batched", "per_row"))
    for key, sizes in (("text_cpu", {"1", "16", "64", "256"}), ("text_blocks_cpu", {"1", "4", "16"})):
        assert set(result[key]) == sizes
        assert all(x[k]["n"] >= 10 and x[k]["p50"] > 0 for x in result[key].values() for k in ("skipped", "applied"))
    table = capsys.readouterr().out
    assert "verify block B=4, tool call" in table and "apply_bitmask [4, V] cpu" in table
    assert "mask a step of 256 call rows cpu: batched / per row" in table
    assert "mask a step of 16 text blocks of B=4 cpu: skipped / applied" in table
