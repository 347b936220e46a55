from __future__ import annotations

import pytest

from turnspec.engine.drafter.config import (
    SMOLLM2_MASK_TOKEN_ID,
    DFlashConfig,
    build_target_layer_ids,
    default_gamma,
)

SMOLLM2 = {"hidden_size": 576, "num_attention_heads": 9, "num_key_value_heads": 3,
           "head_dim": 64, "intermediate_size": 1536, "num_hidden_layers": 30,
           "rms_norm_eps": 1e-5, "rope_parameters": {"rope_theta": 100000.0,
                                                     "rope_type": "default"},
           "vocab_size": 49152, "max_position_embeddings": 8192}


def test_target_layer_ids_match_zlab_rule():
    assert build_target_layer_ids(36, 5) == (1, 9, 17, 25, 33)  # Qwen3-8B, docs/dflash.md §1
    assert build_target_layer_ids(30, 5) == (1, 8, 14, 20, 27)  # SmolLM2 (round half to even)
    assert build_target_layer_ids(4, 2) == (1, 1)
    assert build_target_layer_ids(30, 1) == (15,)
    with pytest.raises(ValueError, match="num_target_layers"):
        build_target_layer_ids(3, 2)


def test_for_target_smollm2_defaults():
    cfg = DFlashConfig.for_target(SMOLLM2, mask_token_id=SMOLLM2_MASK_TOKEN_ID)
    assert (cfg.hidden_size, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim) == (576, 9, 3, 64)
    assert (cfg.intermediate_size, cfg.num_layers, cfg.block_size) == (1536, 3, 16)
    assert cfg.rope_theta == 100000.0 and cfg.rms_norm_eps == 1e-5
    assert cfg.target_layer_ids == (1, 8, 14, 20, 27) and cfg.num_target_layers == 30
    assert cfg.layer_types == ("full_attention",) * 3


def test_hf_dict_round_trip_and_zlab_keys():
    cfg = DFlashConfig.for_target(SMOLLM2, mask_token_id=16, num_layers=2)
    d = cfg.to_hf_dict()
    assert d["architectures"] == ["DFlashDraftModel"] and d["model_type"] == "qwen3"
    assert d["dflash_config"] == {"mask_token_id": 16, "target_layer_ids": [1, 8, 14, 20, 27]}
    assert d["block_size"] == 16 and d["num_target_layers"] == 30
    assert d["num_hidden_layers"] == 2 and d["layer_types"] == ["full_attention"] * 2
    assert DFlashConfig.from_hf_dict(d) == cfg
    sliding = DFlashConfig.for_target(SMOLLM2, mask_token_id=16, num_layers=2)
    sliding = DFlashConfig(**{**{f: getattr(sliding, f) for f in sliding.__slots__},
                              "layer_types": ("sliding_attention", "full_attention"),
                              "sliding_window": 64})
    assert DFlashConfig.from_hf_dict(sliding.to_hf_dict()) == sliding


def test_validation_messages():
    good = DFlashConfig.for_target(SMOLLM2, mask_token_id=16)
    fields = {f: getattr(good, f) for f in good.__slots__}
    with pytest.raises(ValueError, match="mask_token_id"):
        DFlashConfig(**{**fields, "mask_token_id": 49152})
    with pytest.raises(ValueError, match="num_kv_heads"):
        DFlashConfig(**{**fields, "num_kv_heads": 4})
    with pytest.raises(ValueError, match="sliding_window"):
        DFlashConfig(**{**fields, "layer_types": ("sliding_attention",) * 3})
    with pytest.raises(ValueError, match="target_layer_ids"):
        DFlashConfig(**{**fields, "target_layer_ids": (1, 30)})
    with pytest.raises(ValueError, match="architectures"):
        DFlashConfig.from_hf_dict({**good.to_hf_dict(), "architectures": ["LlamaForCausalLM"]})


def test_default_gamma_is_papers():
    assert (default_gamma(16), default_gamma(10), default_gamma(8)) == (7.0, 5.0, 4.0)
