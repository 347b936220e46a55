"""Fixtures shared by the grammar tests: the real SmolLM2 tokenizer and one compiler for it."""

from __future__ import annotations

from pathlib import Path

import pytest

VOCAB_SIZE = 49152  # SmolLM2-135M config.vocab_size


@pytest.fixture(scope="session")
def smollm2_tokenizer(smollm2_dir: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(smollm2_dir)


@pytest.fixture(scope="session")
def compiler(smollm2_tokenizer):
    from turnspec.tools_grammar.grammar import GrammarCompiler

    return GrammarCompiler(smollm2_tokenizer, VOCAB_SIZE, [smollm2_tokenizer.eos_token_id], max_threads=2)
