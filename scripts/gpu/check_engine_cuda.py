"""GPU check of the local engine before anything expensive runs on the lent H200: tiny random
targets (+ drafter) on CUDA through the Triton paged-attention kernel must produce the same
greedy tokens as the CPU engine (fp32), speculative or not; bf16 must run. Exit 1 on mismatch.

    python scripts/gpu/check_engine_cuda.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # repo root: tests.engine.tiny

from tests.engine.local.test_spec_step import run  # noqa: E402
from tests.engine.tiny import make_drafter, make_target, make_tokenizer  # noqa: E402
from turnspec.engine.local.config import LocalEngineConfig  # noqa: E402
from turnspec.engine.local.core import EngineCore  # noqa: E402
from turnspec.engine.protocol import SamplingParams  # noqa: E402


def core(path: Path, vocab: int, device: str, dtype: str, drafter=None) -> EngineCore:
    cfg = LocalEngineConfig(model_dir=str(path), device=device, dtype=dtype, block_size=16,
                            kv_memory_gb=0.2, max_batch=64)
    return EngineCore(cfg, tokenizer=make_tokenizer(vocab), drafter=drafter)


def main() -> int:
    assert torch.cuda.is_available(), "no CUDA device"
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(3):
            vocab = 16 + seed
            target = make_target(Path(tmp), vocab, seed)
            g = torch.Generator().manual_seed(seed)
            prompts = [torch.randint(2, vocab, (int(n),), generator=g).tolist() for n in (3, 20, 37, 9)]
            s = SamplingParams(max_tokens=48, ignore_eos=True)
            ref, _ = run(core(target, vocab, "cpu", "float32"), prompts, s)
            t0 = time.perf_counter()
            gpu, _ = run(core(target, vocab, "cuda", "float32"), prompts, s)
            spec, finals = run(core(target, vocab, "cuda", "float32", make_drafter(target, 8, seed)), prompts, s)
            bf16, _ = run(core(target, vocab, "cuda", "bfloat16", make_drafter(target, 8, seed)), prompts, s)
            same = gpu == ref and spec == ref
            acc = sum(f.spec.accepted_tokens for f in finals if f.spec)
            print(f"seed={seed} cuda_fp32==cpu {gpu == ref} spec==cpu {spec == ref} accepted={acc} "
                  f"bf16_ran={all(len(t) == 48 for t in bf16)} {time.perf_counter() - t0:.1f}s")
            ok &= same
    print("ENGINE CUDA CHECK", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
