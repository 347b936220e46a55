"""Tiny real components for engine tests: a random-weight Llama checkpoint saved as an HF
folder, a real word-level tokenizer over its vocabulary, and a random DFlash drafter."""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedTokenizerFast

from turnspec.engine.drafter.config import DFlashConfig
from turnspec.engine.drafter.model import DFlashDrafter

EOS = 0  # "<eos>"
MASK = 1  # "<mask>": the drafter's MASK token (never produced: see make_target)


def make_tokenizer(vocab: int) -> PreTrainedTokenizerFast:
    words = {"<eos>": 0, "<mask>": 1} | {f"w{i}": i for i in range(2, vocab)}
    tok = Tokenizer(models.WordLevel(words, unk_token="<eos>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>",
                                   additional_special_tokens=["<mask>"])


def make_target(tmp: Path, vocab: int, seed: int, layers: int = 4, hidden: int = 64) -> Path:
    cfg = AutoConfig.for_model("llama", vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden,
                               num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                               max_position_embeddings=512, eos_token_id=EOS, bos_token_id=None,
                               tie_word_embeddings=False)
    torch.manual_seed(seed)
    hf = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    with torch.no_grad():
        for p in hf.parameters():
            p.normal_(0, 0.3) if p.dim() > 1 else p.uniform_(0.5, 1.5)
        hf.lm_head.weight[MASK] = -50.0  # the MASK token is never a real output
        hf.lm_head.weight[EOS] *= 0.1  # rare EOS keeps sequences long enough to speculate
    out = tmp / f"tiny-v{vocab}-s{seed}"
    hf.save_pretrained(out)
    make_tokenizer(vocab).save_pretrained(out)
    return out


def make_drafter(target_dir: Path, block_size: int, seed: int) -> DFlashDrafter:
    import json

    target = json.loads((target_dir / "config.json").read_text())
    cfg = DFlashConfig.for_target(target, num_layers=2, block_size=block_size, mask_token_id=MASK, k=3)
    torch.manual_seed(seed + 1000)
    drafter = DFlashDrafter(cfg)
    drafter.reset_parameters(std=0.3)
    return drafter
