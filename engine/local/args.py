"""The local engine's command-line flags, defined once for every command that runs the model
(serve, generate, chat, the benches, datagen), and their parse into a `LocalEngineConfig`."""

from __future__ import annotations

import argparse

from turnspec.engine.local import LocalEngineConfig
from turnspec.engine.local.config import SPEC_BRANCH_ROWS, SPEC_POLICY_MODES, SPEC_WIDTHS
from turnspec.engine.model.cpu_linear import CPU_GEMMS
from turnspec.engine.spec.swaps import BRANCH_PLANS


def add_engine_args(p: argparse.ArgumentParser, speculator_default: str = "none") -> None:
    g = p.add_argument_group("engine")
    g.add_argument("--model", default=None,
                   help="local HF model folder (default: SmolLM2-135M-Instruct, prepared on first use)")
    g.add_argument("--device", default="cpu", help="cpu | cuda | cuda:N (default: cpu)")
    g.add_argument("--dtype", default=None, help="float32 | bfloat16 | float16 (default: fp32 on CPU, bf16 on CUDA)")
    g.add_argument("--speculator", default=speculator_default,
                   help="none | default | PATH to a DFlash drafter folder (default: %(default)s)")
    _add_spec_args(g)
    g.add_argument("--max-batch", type=int, default=32)
    g.add_argument("--max-context", type=int, default=None)
    g.add_argument("--kv-memory-gb", type=float, default=None)
    g.add_argument("--max-prefill-tokens", type=int, default=4096,
                   help="prompt tokens one prefill step may take (the first prompt of a step is "
                        "always admitted); larger amortises per-step overhead in batch work such "
                        "as datagen, smaller keeps decode steps frequent (default: %(default)s)")
    g.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's, one per core)")
    g.add_argument("--cpu-gemm", choices=CPU_GEMMS, default="auto",
                   help="fp32 GEMM for 1..32 rows on CPU: auto times the backends on the model's "
                        "weights at load and per row bucket keeps F.linear unless a packed one is "
                        ">= 5%% faster (default: %(default)s)")


def _add_spec_args(g: argparse._ArgumentGroup) -> None:
    """The speculator's knobs: block, policy, lookup, branches, width, datastore."""
    g.add_argument("--spec-block-size", type=int, default=None,
                   help="speculative block size (default: the drafter's)")
    g.add_argument("--spec-policy", choices=SPEC_POLICY_MODES, default="adaptive",
                   help="adaptive: a request decodes plainly while its tokens per spec step stay "
                        "below the measured price of a spec step; always: every step speculates "
                        "(default: %(default)s)")
    g.add_argument("--spec-min-confidence", type=float, default=None,
                   help="verify only drafts whose cumulative drafter probability is at least "
                        "this; 0 verifies whole blocks (default: 0.1 on CPU, 0 on CUDA)")
    g.add_argument("--spec-lookup", choices=("on", "off"), default="on",
                   help="prompt-lookup drafts where the drafter expects little or a span of the "
                        "context is being copied (default: %(default)s)")
    g.add_argument("--spec-branches", type=int, default=None,
                   help="blocks each greedy row verifies in one pass, keeping the one accepted "
                        "furthest: 2 adds the block the lookup rule passed over (drafter's or "
                        "lookup), more add the drafter's block under its next most likely "
                        "first tokens; 1..16, each one more verify row (default: 16 on CUDA "
                        "with a speculator, 1 on CPU)")
    g.add_argument("--spec-branch-plan", choices=BRANCH_PLANS, default="planned",
                   help="which drafts the drafter's extra branches swap: first, its first draft "
                        "for its next most likely first tokens; planned, the swaps that add the "
                        "most expected accepted drafts by the drafter's probabilities at every "
                        "position (default: %(default)s)")
    g.add_argument("--spec-branch-rows", type=int, default=SPEC_BRANCH_ROWS,
                   help="extra verify rows the branches may add to one step over the whole batch, "
                        "handed out by rank (every row's first extra branch, then every row's "
                        "second...): one stream gets all its branches, a full batch a few each; "
                        "0: no cap, every branch of every greedy row (default: %(default)s)")
    g.add_argument("--spec-width", choices=SPEC_WIDTHS, default="fixed",
                   help="fixed: every branch under --spec-branch-rows; measured: as many blocks a "
                        "greedy row as commit more tokens a second at the step's batch, from a "
                        "verify cost timed at start-up and the drafter's tau-by-branches.json "
                        "(default: %(default)s)")
    g.add_argument("--spec-datastore", default=None, metavar="PATH",
                   help="the target's earlier answers (datagen samples.jsonl or packed completions, "
                        "a file or folder): with 2+ branches, a greedy row's last extra branch "
                        "is the continuation they most often took after its last tokens (with "
                        "--engine sglang: a branch of --sglang-spec trees)")
    g.add_argument("--spec-datastore-learn", action="store_true",
                   help="the datastore branch also drafts from the answers this server gives, "
                        "learned as each one finishes (kept in memory only, nothing is written); "
                        "with --spec-datastore too, from whichever store matches more")
    g.add_argument("--spec-datastore-learn-tokens", type=int, default=1_000_000, metavar="N",
                   help="tokens of served answers --spec-datastore-learn keeps, the newest "
                        "(default: %(default)s: ~25 MB, twice that while the index is rebuilt)")


def resolve_model_dir(model: str | None) -> str:
    """The --model folder, or the default model (converted from its GGUF once)."""
    if model:
        return model
    from turnspec.engine.model.prepare import prepare_default_model

    return str(prepare_default_model())


def engine_config_from_args(args: argparse.Namespace) -> LocalEngineConfig:
    return LocalEngineConfig(
        model_dir=resolve_model_dir(args.model), device=args.device, dtype=args.dtype,
        speculator=args.speculator, spec_block_size=args.spec_block_size,
        spec_policy=args.spec_policy, spec_min_confidence=args.spec_min_confidence,
        spec_lookup=args.spec_lookup == "on", spec_branches=args.spec_branches,
        spec_branch_plan=args.spec_branch_plan, spec_branch_rows=args.spec_branch_rows or None,
        spec_width=args.spec_width,
        spec_datastore=args.spec_datastore, spec_datastore_learn=args.spec_datastore_learn,
        spec_datastore_learn_tokens=args.spec_datastore_learn_tokens,
        max_batch=args.max_batch, max_context=args.max_context,
        kv_memory_gb=args.kv_memory_gb, max_prefill_tokens=args.max_prefill_tokens,
        threads=args.threads, cpu_gemm=args.cpu_gemm)


def default_speculator() -> str:
    """'default' when the committed SmolLM2 drafter is present, else 'none'."""
    from turnspec.engine.drafter import DEFAULT_DRAFTER_DIR

    return "default" if (DEFAULT_DRAFTER_DIR / "config.json").is_file() else "none"
