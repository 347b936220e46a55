from __future__ import annotations

import json

import pytest
import torch

from tests.speculator.tiny import TINY_VOCAB
from turnspec.speculator.target import FrozenTarget, default_mask_token_id


def test_taps_are_hf_hidden_states_of_layer_outputs(tiny_target_dir):
    from transformers import AutoModelForCausalLM

    ids = torch.randint(3, TINY_VOCAB, (2, 11), generator=torch.Generator().manual_seed(0))
    hf = AutoModelForCausalLM.from_pretrained(tiny_target_dir, dtype=torch.float32).eval()
    with torch.no_grad():
        hs = hf(ids, output_hidden_states=True).hidden_states
    frozen = FrozenTarget.from_model_dir(tiny_target_dir, (3, 1, 4))
    taps = frozen.features(ids)
    assert taps.shape == (2, 11, 3 * 64)
    ref = torch.cat([hs[4], hs[2], hs[5]], dim=-1)                     # hidden_states[id + 1]
    torch.testing.assert_close(taps, ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(frozen.logits(hs[-1]), hf.lm_head(hs[-1]))
    assert not any(p.requires_grad for p in frozen.model.parameters())
    with pytest.raises(ValueError, match="only 6 layers"):
        FrozenTarget.from_model_dir(tiny_target_dir, (6,))


def test_default_mask_token(tmp_path, smollm2_dir):
    assert default_mask_token_id(smollm2_dir) == 16                   # SmolLM2 <empty_output>
    tok = {"added_tokens": [{"id": 5, "content": "<|MASK|>"}]}
    (tmp_path / "tokenizer.json").write_text(json.dumps(tok))
    assert default_mask_token_id(tmp_path) == 5
    (tmp_path / "tokenizer.json").write_text(json.dumps({"added_tokens": []}))
    with pytest.raises(ValueError, match="--mask-token-id"):
        default_mask_token_id(tmp_path)
