"""`turnspec simulate` (benchmarks/simulate*.py, cli/simulate.py): the roofline's bytes and FLOPs
for a tiny config computed by hand, parameter counts against real safetensors, τ, the measured
comparison on an example file whose step times are MADE UP (tests/benchmarks/data/), and the
CLI's tables and errors."""

from __future__ import annotations

import argparse
import json
import math
import struct
from dataclasses import replace
from pathlib import Path

import pytest

from turnspec.benchmarks.simulate import (
    Hardware,
    Simulation,
    alpha_from_tau,
    draft_work,
    hardware,
    target_work,
    tau_at_block,
    tau_from_alphas,
    tau_iid,
)
from turnspec.benchmarks.simulate_measured import compare, read_measured
from turnspec.benchmarks.simulate_shapes import (
    MODEL_PRESETS,
    DrafterShape,
    TransformerShape,
    dflash_preset,
    load_drafter,
    load_model,
)
from turnspec.cli import simulate as simulate_cli

ROOT = Path(__file__).resolve().parents[2]
DRAFTER_DIR = ROOT / "models" / "assets" / "smollm2-dflash"
EXAMPLE = Path(__file__).parent / "data" / "simulate_measured_example.json"  # made-up times

# hidden 8, intermediate 16, 2 layers, 2 heads of 4, 1 KV head, vocab 32, untied, no q/k norm.
# One layer: q 8x8 + k 8x4 + v 8x4 + o 8x8 = 192, MLP 3 x 8 x 16 = 384: 576 matmul weights,
# + 2 RMSNorms of 8 = 592. Read per pass: 2 x 592 + final norm 8 + LM head 32 x 8 = 1448.
# All params: 1448 + embedding 256 = 1704. Matmul weights per token: 2 x 576 + 256 = 1408.
TINY = {"model_type": "llama", "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 2,
        "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "vocab_size": 32}
# The drafter: one Qwen3-style layer of the same shape (576 matmul + 16 norms + q/k norms 2 x 4
# = 600), fc 2 taps x 8 -> 8 = 128, hidden_norm + norm 16: 744 own params.
TINY_DRAFTER = {**TINY, "model_type": "qwen3", "num_hidden_layers": 1, "block_size": 4,
                "dflash_config": {"target_layer_ids": [0, 1]}}


def _safetensors_params(path: Path) -> int:
    """Elements in a safetensors file, from its header (8-byte length, then JSON)."""
    with open(path, "rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    header.pop("__metadata__", None)
    return sum(math.prod(t["shape"]) for t in header.values())


def test_tiny_target_counts_and_pass_work() -> None:
    t = TransformerShape.from_hf_dict(TINY)
    assert (t.layer_matmul_params, t.layer_params) == (576, 592)
    assert (t.read_params, t.params, t.matmul_params) == (1448, 1704, 1408)
    # batch 2, q 3 tokens per row (6 tokens), context 10, 2 bytes per weight and KV element:
    #   weights (1448 + 6 gathered embedding rows x 8) x 2 = 2992
    #   KV read 2 rows x 10 positions x 2 layers x (K+V: 2 x 1 head x 4) x 2 B = 640
    #   KV written 6 tokens x 2 layers x 8 x 2 B = 192              -> 3824 bytes
    #   matmuls 2 x 1408 x 6 = 16896; attention 4 x 6 x 10 x 2 layers x 2 heads x 4 = 3840
    assert target_work(t, batch=2, q=3, ctx=10, weight_bytes=2, kv_bytes=2) == (3824, 20736)


def test_tiny_drafter_counts_and_pass_work() -> None:
    t, d = TransformerShape.from_hf_dict(TINY), DrafterShape.from_hf_dict(TINY_DRAFTER)
    assert (d.params, d.fc_params, d.num_taps, d.block_size) == (744, 128, 2, 4)
    # batch 2, block 4 (8 tokens), context 10, 1 new context row per user:
    #   weights (744 own + target LM head 256 + 8 gathered embedding rows x 8) x 2 = 2128
    #   context KV read 2 x 10 x 1 layer x 8 x 2 = 320; written 2 rows x 1 x 8 x 2 = 32 -> 2480
    #   layers 2 x 576 x 8 = 9216; fc + context k/v 2 x (128 + 8 x 8) x 2 rows = 768;
    #   LM head on 3 slots 2 x 256 x 2 x 3 = 3072; attention 4 x 8 x (10 + 4) x 2 x 4 = 3584
    assert draft_work(d, t, batch=2, block=4, ctx=10, context_rows=1, weight_bytes=2,
                      kv_bytes=2) == (2480, 16640)


def test_roofline_takes_the_larger_time_plus_the_overhead() -> None:
    t = TransformerShape.from_hf_dict(TINY)
    sim = Simulation(t, None, Hardware("test", bandwidth=1000.0, peak_flops=10_000.0),
                     overhead_ms=0.5)
    step = sim.verify(batch=2, block=3, ctx=10)  # 3824 B / 1000 B/s; 20736 FLOP / 10000 FLOP/s
    assert (step.memory_ms, step.compute_ms) == pytest.approx((3824.0, 2073.6))
    assert step.ms == pytest.approx(3824.5) and step.bound == "memory"
    fast_memory = Simulation(t, None, Hardware("test", bandwidth=1e6, peak_flops=10_000.0), 0.0)
    assert fast_memory.verify(2, 3, 10).ms == pytest.approx(2073.6)
    assert fast_memory.verify(2, 3, 10).bound == "compute"


def test_qwen3_8b_params_and_weight_time() -> None:
    t = MODEL_PRESETS["qwen3-8b"]
    # 36 x (192,937,984 matmul + 8,192 norms + 256 q/k norms) + final norm 4,096 + embedding
    # and LM head 2 x 151,936 x 4,096: 8,190,735,360, half of the 16,381,470,720 bytes the
    # Qwen/Qwen3-8B safetensors index gives as total_size.
    assert t.params == 8_190_735_360
    assert round(t.params / 1e9, 2) == 8.19
    # the sanity check: all of 8.19e9 bf16 params at 4.21 TB/s is 3.89 ms per step
    assert 1000 * t.params * 2 / 4.21e12 == pytest.approx(3.891, abs=5e-4)
    # what a pass reads: the embedding only as its one gathered row, so 15,136,819,200 bytes
    sim = Simulation(t, None, hardware("h200", bandwidth_gbs=4210), overhead_ms=0.0)
    step = sim.decode(batch=1, ctx=0)  # + one token's KV written: 36 x 2 x 8 x 128 x 2 B
    assert step.bytes == 15_136_819_200 + 147_456
    assert step.ms == pytest.approx(3.5955, abs=1e-4)


def test_param_counts_match_real_safetensors(smollm2_dir: Path) -> None:
    _, smollm2 = load_model(str(smollm2_dir))
    assert smollm2 == MODEL_PRESETS["smollm2-135m"]
    assert smollm2.params == _safetensors_params(smollm2_dir / "model.safetensors") == 134_515_008
    _, drafter = load_drafter(str(DRAFTER_DIR), smollm2)
    assert drafter is not None
    assert drafter.params == _safetensors_params(DRAFTER_DIR / "model.safetensors") == 15_820_928


def test_dflash_preset_is_five_target_layers() -> None:
    d = dflash_preset(MODEL_PRESETS["qwen3-8b"])
    assert d.target_layer_ids == (1, 9, 17, 25, 33) and d.block_size == 16
    # 5 x 192,946,432 + fc 5 x 4096 x 4096 + two norms of 4096
    assert d.params == 5 * 192_946_432 + 83_886_080 + 8_192


def test_tau_forms_and_block_conversion() -> None:
    assert tau_iid(0.5, 4) == pytest.approx(1.875)            # (1 - 1/16) / (1 - 1/2)
    assert tau_from_alphas([0.5, 0.5, 0.5]) == pytest.approx(1.875)   # 1 + .5 + .25 + .125
    assert tau_from_alphas([0.9, 0.5]) == pytest.approx(2.35)         # 1 + .9 + .45
    assert tau_iid(1.0, 8) == 8.0
    assert alpha_from_tau(1.875, 4) == pytest.approx(0.5)
    assert tau_at_block(1.875, 4, 2) == pytest.approx(1.5)    # α = 1/2 again, (1 - 1/4) / (1/2)
    assert tau_at_block(16.0, 16, 8) == pytest.approx(8.0)    # τ = B: α = 1, capped at the block
    assert tau_at_block(6.5, 16, 16) == 6.5
    with pytest.raises(ValueError, match="expected 1 <= tau <= B = 4"):
        tau_at_block(4.5, 4, 4)
    with pytest.raises(ValueError, match="cannot be carried to a larger block"):
        tau_at_block(3.0, 8, 16)


def test_prediction_ties_eq_1_to_3_together() -> None:
    t = MODEL_PRESETS["qwen3-8b"]
    sim = Simulation(t, dflash_preset(t), hardware("h200", bandwidth_gbs=4210))
    p = sim.predict(8, 16, 1024.0, tau=6.5)
    assert p.draft is not None and p.verify is not None and p.speedup is not None
    per_token = (p.draft.ms + p.verify.ms) / 6.5                       # L
    assert p.speedup == pytest.approx(p.decode.ms / per_token)          # η = t_AR / L
    assert p.speedup == pytest.approx(6.5 / (p.c + p.v))                # = τ / (c + v)
    assert p.tok_s_total == pytest.approx(8 * 1000 / per_token)
    assert sim.predict(8, 16, 1024.0).tok_s_user is None                # no τ, no tok/s


def test_bad_inputs_say_what_was_expected(tmp_path: Path) -> None:
    t = MODEL_PRESETS["qwen3-8b"]
    with pytest.raises(ValueError, match="expected a preset"):
        load_model("qwen9")
    with pytest.raises(FileNotFoundError, match="no such config.json"):
        load_model(str(tmp_path / "missing.json"))
    with pytest.raises(ValueError, match="expected dflash-5 or none"):
        load_drafter("eagle", t)
    with pytest.raises(ValueError, match="reuses the target's LM head"):
        load_drafter(str(DRAFTER_DIR), t)  # SmolLM2's drafter (576 wide) on Qwen3-8B (4096)
    with pytest.raises(ValueError, match="expected one of h100, h200, b200"):
        hardware("a100")
    with pytest.raises(ValueError, match="expected >= 2"):
        Simulation(t, dflash_preset(t), hardware("h200")).predict(1, 1, 1024.0)
    with pytest.raises(ValueError, match="num_key_value_heads=3"):
        TransformerShape.from_hf_dict({**TINY, "num_key_value_heads": 3})


def test_measured_example_against_its_predictions() -> None:
    run = read_measured(EXAMPLE)
    assert run.context == 1024 + 64 and run.hardware_name() == "h200"
    h100 = replace(run, device="NVIDIA H100 80GB HBM3")  # the lent H100's name
    assert h100.hardware_name() == "h100" and hardware("h100").bandwidth == 3.35e12
    t = TransformerShape.from_hf_dict(run.model_config or {})
    d = DrafterShape.from_hf_dict(run.drafter_config or {})
    assert t == MODEL_PRESETS["qwen3-8b"] and d == dflash_preset(t)
    sim = Simulation(t, d, hardware("h200", bandwidth_gbs=run.copy_bandwidth_gbs))
    rows = compare(sim, run)
    assert rows[0].predicted_ms == sim.decode(1, 1088.0).ms
    spec = sim.predict(8, 16, 1088.0, context_rows=5.8)
    assert rows[4].predicted_ms == spec.spec_ms
    assert rows[4].error == pytest.approx((spec.spec_ms - 6.2) / 6.2)
    # the made-up times: the two small-batch DFlash points sit > 15% above the model
    assert [r.flagged for r in rows] == [False, False, False, True, True, False]
    with pytest.raises(ValueError, match="expected a drafter"):
        compare(Simulation(t, None, sim.hardware), run)


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="turnspec")
    simulate_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["simulate", *argv])
    return args.func(args)


def test_cli_table_projection_and_json(tmp_path: Path, capsys) -> None:
    out = tmp_path / "sim.json"
    assert _cli(["--hardware", "b200", "--tau", "6.5", "--compare-published", "955",
                 "--concurrency", "1", "--blocks", "8,16", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    record = json.loads(out.read_text())
    proj = record["projection"]
    assert proj["block"] == 16 and proj["ratio_to_published"] == pytest.approx(proj["tok_s"] / 955)
    assert f"predicted / published = {proj['ratio_to_published']:.2f}" in text
    row16 = record["predictions"][1]
    assert row16["tok_s_user"] == pytest.approx(proj["tok_s"])
    assert f"{row16['t_ar']['ms']:9.3f}" in text and "6.50" in text
    assert record["predictions"][0]["tau"] == pytest.approx(tau_at_block(6.5, 16, 8))


def test_cli_measured_takes_configs_and_bandwidth_from_the_file(capsys) -> None:
    assert _cli(["--measured", str(EXAMPLE), "--blocks", "16", "--concurrency", "1"]) == 0
    text = capsys.readouterr().out
    assert "4210 GB/s (sheet 4800)" in text and "taps (1, 9, 17, 25, 33)" in text
    assert "4 of 6 points within 15%" in text and text.count("%  OFF\n") == 2


@pytest.mark.parametrize(("argv", "message"), [
    (["--blocks", "1,16"], "--blocks '1,16': expected every value >= 2"),
    (["--blocks", "4,x"], "expected comma-separated integers"),
    (["--tau", "17"], "expected 1 <= tau <= B = 16"),
    (["--blocks", "32"], "expected at most the drafter's trained block 16"),
    (["--drafter", "none", "--tau", "3"], "--tau: expected a drafter"),
    (["--compare-published", "955"], "expected a tok/s > 0 and --tau"),
    (["--measured", "nowhere.json"], "no such file"),
])
def test_cli_refuses_bad_inputs(argv: list[str], message: str, capsys) -> None:
    from turnspec.cli.main import main

    assert main(["simulate", *argv]) == 2
    assert message in capsys.readouterr().err
