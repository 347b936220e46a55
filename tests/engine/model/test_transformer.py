"""Exactness: turnspec's Transformer vs transformers' modules on tiny random checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM

from turnspec.engine.model.attention import AttentionBatch
from turnspec.engine.model.cpu_linear import pack_linears
from turnspec.engine.model.rope import RotaryTable
from turnspec.engine.model.weights import load_model

TINY = dict(vocab_size=257, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
            rms_norm_eps=1e-6)
FAMILIES = {
    "llama": dict(model_type="llama", tie_word_embeddings=False),
    "llama_tied": dict(model_type="llama", tie_word_embeddings=True),
    "llama3_rope": dict(model_type="llama", rope_scaling=dict(
        rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
        original_max_position_embeddings=64)),
    "qwen2": dict(model_type="qwen2", tie_word_embeddings=False),
    "qwen3": dict(model_type="qwen3", head_dim=16, tie_word_embeddings=False),
}


def make_checkpoint(tmp: Path, family: str, seed: int = 0) -> Path:
    extra = dict(FAMILIES[family])
    mt = extra.pop("model_type")
    cfg = AutoConfig.for_model(mt, **TINY, **extra)
    torch.manual_seed(seed)
    hf = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    with torch.no_grad():  # random norms so q/k-norm and RMSNorm weights matter
        for name, p in hf.named_parameters():
            if "norm" in name:
                p.uniform_(0.5, 1.5)
            if name.endswith("bias"):
                p.normal_(0, 0.1)
    out = tmp / family
    hf.save_pretrained(out)
    return out


def run_prefill(model, ids: torch.Tensor, block_size: int = 4) -> torch.Tensor:
    cfg = model.cfg
    n = ids.shape[1]
    n_blocks = (n + block_size - 1) // block_size + 2
    pools = torch.zeros(2, cfg.num_layers, n_blocks, block_size, cfg.num_kv_heads, cfg.head_dim)
    table = list(reversed(range(n_blocks)))  # non-contiguous block order on purpose
    batch = AttentionBatch.build([table], [n], [n], block_size, torch.device("cpu"))
    rope = RotaryTable(cfg.rope, cfg.head_dim, 256, torch.device("cpu"), torch.float32)
    cos, sin = rope.lookup(torch.arange(n).unsqueeze(0))
    hidden, _ = model(ids, cos, sin, pools[0], pools[1], batch)
    return model.logits(hidden)


@pytest.mark.parametrize("packed", [False, True], ids=["f_linear", "mkl_packed"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_logits_match_transformers(tmp_path: Path, family: str, packed: bool) -> None:
    path = make_checkpoint(tmp_path, family)
    hf = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    ours = load_model(path)
    if packed:
        assert pack_linears(ours) > 0
    ids = torch.randint(0, TINY["vocab_size"], (1, 23), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ref = hf(ids).logits
    got = run_prefill(ours, ids)
    assert (got - ref).abs().max().item() <= 1e-4


def test_unsupported_architecture(tmp_path: Path) -> None:
    import json
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}))
    with pytest.raises(ValueError, match="unsupported architecture model_type='gpt2'"):
        load_model(tmp_path)


def test_unknown_model_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_model(tmp_path / "nope")
