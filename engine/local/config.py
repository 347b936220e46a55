"""LocalEngineConfig: the embedded engine's knobs, validated once at the edge."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from turnspec.engine.model.cpu_linear import CPU_GEMMS
from turnspec.engine.spec.options import MAX_BRANCHES as MAX_SPEC_BRANCHES
from turnspec.engine.spec.swaps import BRANCH_PLANS

SPEC_POLICY_MODES = ("adaptive", "always")  # engine/local/spec_policy.py
CUDA_SPEC_BRANCHES = 16  # the default on CUDA (spec_branches)
SPEC_BRANCH_ROWS = 32  # the default cap on a step's extra verify rows (spec_branch_rows)
SPEC_WIDTHS = ("fixed", "measured")  # spec_width

DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
          "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16,
          "float64": torch.float64}


@dataclass(slots=True, frozen=True)
class LocalEngineConfig:
    model_dir: str
    device: str = "cpu"
    dtype: str | None = None  # None: float32 on CPU, bfloat16 on CUDA
    max_batch: int = 32
    max_context: int | None = None  # None: the model's max_position_embeddings, capped at 8192
    block_size: int = 16
    kv_memory_gb: float | None = None  # None: 1 GiB on CPU, 16 GiB on CUDA
    max_prefill_tokens: int = 4096
    # a prefill step waits until this many batch slots are free (or every waiting request
    # fits): 1 admits each arrival at once (serving: first-token latency); offline datagen uses
    # ~max_batch/8, so full decode steps are not cut by a small prefill step each time one row
    # finishes (scheduler.py)
    admit_min_free: int = 1
    speculator: str = "none"  # "none" | "default" | path to a DFlash checkpoint folder
    spec_block_size: int | None = None  # None: the drafter's trained block
    spec_policy: str = "adaptive"  # "adaptive": pause speculation where it does not pay | "always"
    # verify only drafts with cumulative drafter probability >= this (engine/spec/proposers/
    # drafter.py); None: spec_build.CPU_SPEC_MIN_CONFIDENCE on CPU (a verify's cost grows with
    # its length there), 0 on CUDA
    spec_min_confidence: float | None = None
    # prompt-lookup drafts where the drafter expects little or a span of the context is being
    # copied (engine/spec/planner.py, proposers/lookup.py); on by default on CPU and CUDA
    # (docs/history/benchmarks-2026-12.md: voice 2.30x -> 3.18x over plain decode on the H200, 24 turns a source)
    spec_lookup: bool = True
    # verify branches per greedy row (engine/spec/planner.py, shadow_kv.py): 1 verifies the
    # block the drafter and the lookup rule chose; 2 also the block the rule passed over; more
    # also the drafter's block with drafts swapped for its next guesses. Each branch is one
    # more verify row. None: CUDA_SPEC_BRANCHES on CUDA (docs/benchmarks.md: one stream, voice
    # 4.03x -> 4.64x and generic 1.36x -> 1.70x over plain decode on the H200 against 3
    # branches), 1 on CPU (a row's compute a branch)
    spec_branches: int | None = None
    # which drafts the drafter's swapped blocks swap (engine/spec/swaps.py): "first" its first
    # draft for its next most likely first tokens; "planned" the swaps that add the most expected
    # accepted drafts, by the drafter's probabilities at every position (more τ at every branch
    # count, docs/dflash.md §7)
    spec_branch_plan: str = "planned"
    # extra verify rows the branches may add to one step, over the whole batch (the planner,
    # engine/spec/planner.py, hands them out by rank: every greedy row's first extra branch, then every row's second...).
    # None: every greedy row verifies all its branches, max_batch * (branches - 1) rows at most.
    # The cap keeps a wide tree cheap under load: one stream gets all its branches, a full batch
    # one each (docs/history/benchmarks-2026-12.md: 32 streams on the H200, 16 branches with no cap lost a
    # third of the voice tok/s; with 32 rows they beat 3 uncapped branches)
    spec_branch_rows: int | None = SPEC_BRANCH_ROWS
    # "fixed": every branch under spec_branch_rows; "measured": as many blocks a row as pay at
    # this step's batch, by a verify cost timed at start-up against the drafter's τ by branches
    # (engine/local/verify_cost.py, engine/spec/width.py), still under spec_branch_rows
    spec_width: str = "fixed"
    # the target's earlier answers (datagen samples or packed completions, a file or a folder):
    # with 2+ branches, a greedy row's last extra branch is the continuation those answers most
    # often took after its last tokens (engine/spec/proposers/datastore.py); None: no datastore
    # branch
    spec_datastore: str | None = None
    # with 2+ branches: the datastore branch also drafts from the answers this engine finishes,
    # the newest spec_datastore_learn_tokens tokens of them, kept in memory only
    # (engine/spec/proposers/learning.py); with spec_datastore too, a row drafts from whichever
    # store matched more of its last tokens
    spec_datastore_learn: bool = False
    spec_datastore_learn_tokens: int = 1_000_000
    # torch intra-op threads (None: torch's default, one per core). On CUDA they run only the
    # small host-side ops, so a process beside others may want 1 (scripts/gpu/pipeline.sh)
    threads: int | None = None
    # fp32 GEMM for 1..32 rows on CPU: "auto" times oneDNN / MKL packed / torch on the model's
    # weights at load and per row bucket keeps F.linear unless a packed one is >= 5% faster
    # (engine/model/cpu_gemm_plan.py)
    cpu_gemm: str = "auto"

    def __post_init__(self) -> None:
        if self.device not in ("cpu", "cuda") and not self.device.startswith("cuda:"):
            raise ValueError(f"device: expected 'cpu' or 'cuda[:N]', got {self.device!r}")
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError("device: 'cuda' requested but torch.cuda.is_available() is False")
        if self.dtype is not None and self.dtype not in DTYPES:
            raise ValueError(f"dtype: expected one of {sorted(DTYPES)}, got {self.dtype!r}")
        for name in ("max_batch", "block_size", "max_prefill_tokens", "admit_min_free"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name}: expected a positive integer, got {v!r}")
        if self.admit_min_free > self.max_batch:
            raise ValueError(f"admit_min_free={self.admit_min_free}: expected at most "
                             f"max_batch={self.max_batch} (more slots than a batch has never free up)")
        if self.threads is not None and (not isinstance(self.threads, int) or self.threads < 1):
            raise ValueError("threads: expected a positive integer or None (torch's default), "
                             f"got {self.threads!r}")
        if self.max_context is not None and self.max_context < 2:
            raise ValueError(f"max_context: expected >= 2, got {self.max_context}")
        if self.kv_memory_gb is not None and self.kv_memory_gb <= 0:
            raise ValueError(f"kv_memory_gb: expected > 0, got {self.kv_memory_gb}")
        if self.spec_policy not in SPEC_POLICY_MODES:
            raise ValueError(f"spec_policy: expected one of {SPEC_POLICY_MODES}, got {self.spec_policy!r}")
        if self.spec_min_confidence is not None and not 0 <= self.spec_min_confidence < 1:
            raise ValueError(f"spec_min_confidence: expected 0 <= value < 1, got {self.spec_min_confidence}")
        if not isinstance(self.spec_lookup, bool):
            raise ValueError(f"spec_lookup: expected True or False, got {self.spec_lookup!r}")
        if self.spec_branches is not None and (
                not isinstance(self.spec_branches, int) or isinstance(self.spec_branches, bool)
                or not 1 <= self.spec_branches <= MAX_SPEC_BRANCHES):
            raise ValueError(f"spec_branches: expected an integer 1..{MAX_SPEC_BRANCHES}, got "
                             f"{self.spec_branches!r}")
        if self.spec_branch_rows is not None and (
                not isinstance(self.spec_branch_rows, int) or isinstance(self.spec_branch_rows, bool)
                or self.spec_branch_rows < 1):
            raise ValueError(f"spec_branch_rows: expected a positive integer or None (every "
                             f"branch of every greedy row), got {self.spec_branch_rows!r}")
        if self.spec_width not in SPEC_WIDTHS:
            raise ValueError(f"spec_width: expected one of {SPEC_WIDTHS}, got {self.spec_width!r}")
        if self.spec_datastore is not None and not Path(self.spec_datastore).exists():
            raise ValueError(f"spec_datastore: {self.spec_datastore!r} does not exist; expected a "
                             "file or folder of datagen samples or packed completions")
        if not isinstance(self.spec_datastore_learn, bool):
            raise ValueError(f"spec_datastore_learn: expected True or False, got "
                             f"{self.spec_datastore_learn!r}")
        if (not isinstance(self.spec_datastore_learn_tokens, int)
                or isinstance(self.spec_datastore_learn_tokens, bool)
                or self.spec_datastore_learn_tokens < 1024):
            raise ValueError(f"spec_datastore_learn_tokens: expected an integer >= 1024 (tokens "
                             f"of served answers kept), got {self.spec_datastore_learn_tokens!r}")
        if self.spec_branch_plan not in BRANCH_PLANS:
            raise ValueError(f"spec_branch_plan: expected one of {BRANCH_PLANS}, got "
                             f"{self.spec_branch_plan!r}")
        if self.cpu_gemm not in CPU_GEMMS:
            raise ValueError(f"cpu_gemm: expected one of {CPU_GEMMS}, got {self.cpu_gemm!r}")
        if self.spec_block_size is not None and not (1 <= self.spec_block_size <= 64):
            raise ValueError(f"spec_block_size: expected 1..64, got {self.spec_block_size}")

    def branches_for(self, on_cpu: bool, has_drafter: bool) -> int:
        """Verify branches per greedy row: spec_branches, else CUDA_SPEC_BRANCHES on CUDA with a
        drafter and 1 otherwise."""
        if self.spec_branches is not None:
            return self.spec_branches
        return CUDA_SPEC_BRANCHES if has_drafter and not on_cpu else 1

    @property
    def torch_dtype(self) -> torch.dtype:
        if self.dtype is not None:
            return DTYPES[self.dtype]
        return torch.float32 if self.device == "cpu" else torch.bfloat16

    @property
    def torch_device(self) -> torch.device:
        return torch.device(self.device)
