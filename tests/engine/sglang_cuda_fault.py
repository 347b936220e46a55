"""A CUDA error on demand inside an SGLang forward step, through SGLang's own `forward_hooks`
server argument (no plugin, no patch): `make_hook` is its hook factory, loaded in the scheduler
process by import path, e.g.

    --sglang-arg 'forward_hooks=[{"name": "fault", "target_modules": ["model.norm"],
        "hook_factory": "turnspec.tests.engine.sglang_cuda_fault:make_hook",
        "config": {"trigger": "/tmp/turnspec-cuda-fault"}}]'

Once the trigger file exists, the next eager forward of the target module (a prefill: decode
replays CUDA graphs, which run no Python hooks) reads its output at an index far out of
bounds: a device-side assert, the CUDA error that poisons the context, surfacing at the
scheduler's next sync. Used by test_sglang_cuda_faults.py on the GPU only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def make_hook(config: dict[str, Any]):
    import torch

    trigger = Path(config["trigger"])

    def hook(module: Any, inputs: Any, output: Any) -> None:
        out = output[0] if isinstance(output, tuple) else output
        if torch.cuda.is_current_stream_capturing() or not trigger.exists():
            return None
        trigger.unlink(missing_ok=True)
        far = torch.full((1,), out.numel() + (1 << 20), dtype=torch.long, device=out.device)
        out.reshape(-1)[far].sum()  # out of bounds: CUDA_KERNEL_ASSERT in the index kernel
        return None
    return hook
