"""Tiny real components for speculator tests: a random Llama target saved as an HF folder
and an `answer` that runs it greedily through transformers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch

TINY_VOCAB = 128
TINY_LAYER_IDS = (1, 3)  # build_target_layer_ids(6, 2)
TINY_MASK = TINY_VOCAB - 1  # never in prompts; the random target may emit it, harmless here
NEW_TOKENS = 32


def make_tiny_target(out: Path) -> Path:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=6,
                      num_attention_heads=4, num_key_value_heads=2, vocab_size=TINY_VOCAB,
                      max_position_embeddings=512, rope_theta=10000.0, rms_norm_eps=1e-6,
                      tie_word_embeddings=True, bos_token_id=None, eos_token_id=None,
                      pad_token_id=0)  # no EOS: every answer is pure argmax, full length
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(out)
    return out


def greedy_answer(model_dir: Path, max_new_tokens: int) -> Callable[[list[list[int]]],
                                                                     list[list[int]]]:
    """answer(prompts) with transformers greedy generate, batched per prompt length."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()

    def answer(prompts: list[list[int]]) -> list[list[int]]:
        out: list[list[int] | None] = [None] * len(prompts)
        by_len: dict[int, list[int]] = {}
        for i, p in enumerate(prompts):
            by_len.setdefault(len(p), []).append(i)
        for n, idx in by_len.items():
            ids = torch.tensor([prompts[i] for i in idx])
            with torch.no_grad():
                gen = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                     max_new_tokens=max_new_tokens,
                                     pad_token_id=0)
            for row, i in enumerate(idx):
                out[i] = gen[row, n:].tolist()
        return out  # type: ignore[return-value]

    return answer


def make_tiny_data(target_dir: Path, out: Path, n: int = 256) -> Path:
    import random

    from turnspec.speculator.datagen import PromptItem, generate_dataset

    rng = random.Random(0)
    items = [PromptItem(id=f"p{i}", split="heldout" if i % 8 < 2 else "train",
                        source="tools" if i % 2 else "generic",
                        prompt_ids=tuple(rng.randrange(3, TINY_MASK)
                                         for _ in range(rng.choice([8, 12, 16]))))
             for i in range(n)]
    generate_dataset(items, greedy_answer(target_dir, NEW_TOKENS), out, batch_size=64,
                     progress=False)
    return out
