"""benchmarks/sizing.py without a GPU: the Qwen3-8B config it writes, the drafter of the matching
shape, the merge of per-block files, and its refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from turnspec.benchmarks import sizing
from turnspec.benchmarks.simulate_shapes import DrafterShape, TransformerShape


def test_the_target_is_qwen3_8b_shaped() -> None:
    t = TransformerShape.from_hf_dict(sizing.QWEN3_8B, "qwen3-8b")
    assert t.params == 8_190_735_360


def test_drafter_taps_five_evenly_spaced_layers_like_z_lab() -> None:
    d = sizing.drafter_config(sizing.QWEN3_8B, 5, 16)
    assert d["dflash_config"]["target_layer_ids"] == [1, 9, 17, 25, 33]  # z-lab's Qwen3-8B
    assert d["architectures"] == ["DFlashDraftModel"] and d["block_size"] == 16
    assert d["dflash_config"]["mask_token_id"] < sizing.QWEN3_8B["vocab_size"]
    DrafterShape.from_hf_dict(d, "dflash").check_target(
        TransformerShape.from_hf_dict(sizing.QWEN3_8B, "qwen3-8b"))


def test_merge_keeps_every_point_and_the_largest_blocks_drafter(tmp_path: Path) -> None:
    (tmp_path / "sizing-meta.json").write_text(json.dumps(
        {"device": "NVIDIA H200", "copy_bandwidth_gbs": 4000.0, "prompt_tokens": 1024,
         "decode_tokens": 128}))
    for block in (0, 4, 16):
        part = {"block": block, "engine_up_s": 1.0, "sglang": "x", "model_config": sizing.QWEN3_8B,
                "drafter_config": sizing.drafter_config(sizing.QWEN3_8B, 5, block) if block else None,
                "points": [{"mode": "decode" if block == 0 else "dflash", "concurrency": 1,
                            "block": max(block, 1), "step_ms": 1.0, "steps": 10}]}
        (tmp_path / f"sizing-b{block:02d}.json").write_text(json.dumps(part))
    merged = sizing.merge(tmp_path)
    assert merged["drafter_config"]["block_size"] == 16
    assert [p["block"] for p in merged["points"]] == [1, 4, 16]
    assert merged["copy_bandwidth_gbs"] == 4000.0


def test_bad_block_and_empty_folder_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="expected 0 .* or >= 2"):
        sizing.main(["--out", str(tmp_path), "--block", "1"])
    with pytest.raises(SystemExit, match="no sizing-b"):
        sizing.merge(tmp_path)
    with pytest.raises(SystemExit, match="rides on DFLASH"):
        sizing.main(["--out", str(tmp_path), "--block", "0", "--plugin", "trees"])
    for bad in ("0", "1.0", "-0.5"):
        with pytest.raises(SystemExit, match=r"--mem-fraction: expected a fraction in \(0, 1\)"):
            sizing.main(["--out", str(tmp_path), "--block", "256", "--mem-fraction", bad])


def test_merge_refuses_blocks_of_different_plugin_modes(tmp_path: Path) -> None:
    (tmp_path / "sizing-meta.json").write_text(json.dumps({"device": "X", "prompt_tokens": 8,
                                                           "decode_tokens": 8}))
    for block, plugin in ((16, "trees"), (32, "off")):
        (tmp_path / f"sizing-b{block:02d}.json").write_text(json.dumps(
            {"block": block, "plugin": plugin, "engine_up_s": 1.0, "model_config": {},
             "drafter_config": sizing.drafter_config(sizing.QWEN3_8B, 5, block), "points": []}))
    with pytest.raises(SystemExit, match="different plugin modes"):
        sizing.merge(tmp_path)
    (tmp_path / "sizing-b32.json").unlink()
    assert sizing.merge(tmp_path)["plugin"] == "trees"


def test_config_flag_takes_another_target_and_refuses_a_non_config(tmp_path: Path) -> None:
    assert sizing.target_config(None) is sizing.QWEN3_8B
    other = {**sizing.QWEN3_8B, "num_hidden_layers": 28}
    (tmp_path / "config.json").write_text(json.dumps(other))
    assert sizing.target_config(str(tmp_path / "config.json"))["num_hidden_layers"] == 28
    (tmp_path / "bad.json").write_text(json.dumps({"hidden_size": 8}))
    with pytest.raises(SystemExit, match="missing"):
        sizing.target_config(str(tmp_path / "bad.json"))
