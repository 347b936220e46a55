"""z-lab / SGLang checkpoint layout: exact keys, config, and a bit-exact round trip."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors import safe_open

from turnspec.engine.drafter.config import DFlashConfig
from turnspec.engine.drafter.folder import load_drafter, read_drafter, save_drafter
from turnspec.engine.drafter.model import DFlashDrafter

CFG = DFlashConfig(hidden_size=32, num_layers=2, num_heads=4, num_kv_heads=2, head_dim=8,
                   intermediate_size=48, rms_norm_eps=1e-5, rope_theta=100000.0, block_size=4,
                   mask_token_id=3, target_layer_ids=(1, 2, 3), num_target_layers=6,
                   vocab_size=64)
LAYER_KEYS = {f"self_attn.{p}_proj.weight" for p in "qkvo"} | {
    "self_attn.q_norm.weight", "self_attn.k_norm.weight", "mlp.gate_proj.weight",
    "mlp.up_proj.weight", "mlp.down_proj.weight", "input_layernorm.weight",
    "post_attention_layernorm.weight"}


def _drafts(d: DFlashDrafter) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    dt = d.fc.weight.dtype
    taps = torch.randn(1, 9, 3 * 32, generator=g).to(dt)
    kv = d.context_kv(d.project_context(taps[0]), torch.arange(9))
    embeds = torch.randn(2, 4, 32, generator=g).to(dt)
    pos = torch.tensor([[9, 10, 11, 12], [7, 8, 9, 10]])
    head = torch.randn(64, 32, generator=g).to(dt)
    k = [t[None].expand(2, -1, -1, -1) for t, _ in kv]
    v = [t[None].expand(2, -1, -1, -1) for _, t in kv]
    h = d.forward_block(embeds, pos, k, v, torch.tensor([9, 7]))
    return (h[:, 1:] @ head.T).argmax(-1), h


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_round_trip_is_exact(tmp_path, dtype):
    torch.manual_seed(0)
    d = DFlashDrafter(CFG).to(dtype).eval()
    save_drafter(d, tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert cfg["architectures"] == ["DFlashDraftModel"] and cfg["model_type"] == "qwen3"
    assert cfg["dflash_config"] == {"mask_token_id": 3, "target_layer_ids": [1, 2, 3]}
    assert cfg["torch_dtype"] == str(dtype).removeprefix("torch.")
    with safe_open(str(tmp_path / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
        assert f.get_tensor("fc.weight").shape == (32, 3 * 32)
    expected = {f"layers.{i}.{k}" for i in range(2) for k in LAYER_KEYS}
    assert keys == expected | {"fc.weight", "hidden_norm.weight", "norm.weight"}
    back = read_drafter(tmp_path)
    assert back.config == CFG
    for (k1, t1), (k2, t2) in zip(d.state_dict().items(), back.state_dict().items(), strict=True):
        assert k1 == k2 and t1.dtype == t2.dtype and torch.equal(t1, t2)
    ids0, h0 = _drafts(d)
    ids1, h1 = _drafts(back)
    assert torch.equal(ids0, ids1) and torch.equal(h0, h1)


def test_bf16_export_of_fp32_drafter_and_dtype_on_load(tmp_path):
    d = DFlashDrafter(CFG)
    save_drafter(d, tmp_path, dtype=torch.bfloat16)
    back = load_drafter(tmp_path, device="cpu", dtype=torch.float32)
    assert not back.training and not any(p.requires_grad for p in back.parameters())
    torch.testing.assert_close(back.fc.weight, d.fc.weight.bfloat16().float(), rtol=0, atol=0)


def test_mismatched_weights_are_named(tmp_path):
    save_drafter(DFlashDrafter(CFG), tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["dflash_config"]["target_layer_ids"] = [1, 2]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="wrong shape .*fc.weight"):
        read_drafter(tmp_path)
    with pytest.raises(FileNotFoundError, match="expected config.json"):
        read_drafter(tmp_path / "nope")
