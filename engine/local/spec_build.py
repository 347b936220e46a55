"""Building the embedded engine's speculation from its config: the drafter as the engine runs
it, the speculation core's options, the scratch KV for shadow rows and the proposers besides
the drafter (prompt lookup, the datastore, the learning datastore). EngineCore calls these in
order; spec_step.py reads the `Speculation` they make.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import torch

from turnspec.engine.drafter.folder import drafter_folder
from turnspec.engine.local.config import LocalEngineConfig
from turnspec.engine.local.draft_context import FusedContextKV
from turnspec.engine.local.runner import ModelRunner
from turnspec.engine.local.shadow_kv import ShadowKV
from turnspec.engine.local.spec_policy import SpecPolicy
from turnspec.engine.local.verify_cost import draft_cost, read_tau_curve, verify_cost
from turnspec.engine.model.cpu_linear import cpu_has_native_bf16, pack_bf16_linears, pack_linears
from turnspec.engine.spec.options import SpecOptions
from turnspec.engine.spec.proposers.datastore import TokenDatastore
from turnspec.engine.spec.proposers.learning import LearningDatastore
from turnspec.engine.spec.proposers.lookup import PromptLookup
from turnspec.engine.spec.width import WidthRule

log = logging.getLogger("turnspec.engine")

# Confidence-truncated verify on CPU (engine/spec/proposers/drafter.py): a draft is verified
# while the drafter's cumulative probability stays >= this (docs/history/notes/cpu-spec-step.md).
CPU_SPEC_MIN_CONFIDENCE = 0.1


@dataclass(slots=True)
class Speculation:
    """What a spec step reads: the core's options, the adaptive policy's state, the proposers
    besides the drafter, and the scratch KV its extra blocks verify in (None: one branch)."""
    options: SpecOptions
    policy: SpecPolicy
    lookup: PromptLookup
    store: TokenDatastore | LearningDatastore | None  # the datastore branch's proposer
    shadows: ShadowKV | None
    learner: LearningDatastore | None = None  # learns each finished answer (`store` too)


def prepare_drafter(cfg: LocalEngineConfig, dtype: torch.dtype, drafter=None):
    """The drafter as the engine runs it, and its fused context K/V (draft_context.py), or
    (None, None) without one. `drafter`: one already built (tests), else cfg.speculator's. Drafts
    are proposals the target verifies, so the drafter may run in a cheaper dtype: bf16 on a CPU
    with bf16 dot products (engine/model/cpu_linear.py), else the target's."""
    device = cfg.torch_device
    ddtype = torch.bfloat16 if device.type == "cpu" and dtype == torch.float32 \
        and cpu_has_native_bf16() else dtype
    if drafter is not None:
        drafter = drafter.to(device=device, dtype=ddtype).eval()
    elif cfg.speculator != "none":
        from turnspec.engine.drafter import load_drafter

        drafter = load_drafter(cfg.speculator, device=device, dtype=ddtype)
    if drafter is None:
        return None, None
    # all layers' context K/V in one GEMM; built before the prepacking below
    context_kv = FusedContextKV(drafter) if FusedContextKV.fusable(drafter) else None
    if device.type == "cpu":  # frozen: prepacked weights
        if ddtype == torch.float32:
            pack_linears(drafter, cfg.cpu_gemm)
        elif ddtype == torch.bfloat16 and cpu_has_native_bf16():
            pack_bf16_linears(drafter)
    return drafter, context_kv


def spec_block(cfg: LocalEngineConfig, drafter) -> int:
    """Tokens a verify covers (anchor + drafts): cfg.spec_block_size, at most and by default
    the drafter's trained block; 0 without a drafter. The trained block on CPU too: B=8 led
    there until confidence-truncated verify made a long block cost only what the drafter is
    sure of; since then B=16 leads (2.12x vs 2.00x; docs/history/notes/cpu-policy-backoff.md)."""
    if drafter is None:
        return 0
    trained = drafter.config.block_size
    if cfg.spec_block_size and cfg.spec_block_size > trained:
        raise ValueError(f"spec_block_size={cfg.spec_block_size}: the drafter was trained with "
                         f"block size {trained}; serve at most that (DFlash paper, Table 8)")
    return cfg.spec_block_size or trained


def spec_options(cfg: LocalEngineConfig, has_drafter: bool) -> SpecOptions:
    """The speculation core's options for this engine: a confidence cut on CPU, where a
    verify's cost grows with its length; verify branches by default on CUDA, where it does not."""
    on_cpu = cfg.torch_device.type == "cpu"
    branches = cfg.branches_for(on_cpu, has_drafter)
    if branches > 1 and not has_drafter:
        raise ValueError(f"spec_branches={branches}: expected a speculator (--speculator default "
                         "or PATH); there is no drafter's block to branch from")
    if (cfg.spec_datastore is not None or cfg.spec_datastore_learn) and branches < 2:
        raise ValueError(f"spec_datastore: its block rides as a verify branch; expected "
                         f"--spec-branches 2 or more with a speculator, got {branches}")
    theta = cfg.spec_min_confidence
    return SpecOptions(
        min_confidence=theta if theta is not None else (CPU_SPEC_MIN_CONFIDENCE if on_cpu else 0.0),
        lookup=cfg.spec_lookup, branches=branches, plan=cfg.spec_branch_plan,
        max_extra_rows=cfg.spec_branch_rows)


def shadow_blocks(options: SpecOptions, max_batch: int, kv_block: int, max_block: int,
                  kv_blocks: int) -> tuple[int, int]:
    """(shadow rows, scratch KV blocks) for `options` at `max_batch` rows: the most extra rows
    a step may verify, each with room for a block of up to `max_block` tokens."""
    rows = options.most_extra_rows(max_batch)
    if not rows:
        return 0, 0
    scratch = rows * ShadowKV.blocks_per_row(kv_block, max_block)
    if scratch >= kv_blocks:
        raise ValueError(f"spec_branches={options.branches}: needs {scratch} scratch KV blocks "
                         f"of the {kv_blocks} there are; expected a larger --kv-memory-gb, a "
                         "smaller --max-batch or fewer --spec-branches")
    return rows, scratch


def build_speculation(cfg: LocalEngineConfig, options: SpecOptions, runner: ModelRunner,
                      shadows: ShadowKV | None,
                      datastore: TokenDatastore | None = None) -> Speculation:
    """The engine's Speculation. `datastore`: cfg.spec_datastore's answers already read (bench
    spec shares one store between its cores and its check), else read here."""
    if datastore is not None and cfg.spec_datastore is None:
        raise ValueError("datastore: given without cfg.spec_datastore; expected the store "
                         "read from that path")
    store = datastore if datastore is not None else \
        TokenDatastore.from_path(cfg.spec_datastore) if cfg.spec_datastore else None
    # the served answers feed the datastore branch (learning.py); None: not learning
    learner = LearningDatastore(store, cfg.spec_datastore_learn_tokens) \
        if cfg.spec_datastore_learn else None
    policy = SpecPolicy(mode=cfg.spec_policy)
    if cfg.spec_width == "measured":
        options = replace(options, width=measured_width(cfg, options, runner))
    return Speculation(options, policy, PromptLookup(), learner or store, shadows, learner)


def measured_width(cfg: LocalEngineConfig, options: SpecOptions, runner: ModelRunner) -> WidthRule:
    """`--spec-width measured`: the verify cost timed now on this device against the drafter's
    τ by branches (verify_cost.py)."""
    if not options.extra or runner.drafter is None:
        raise ValueError("spec_width='measured' chooses among verify branches; expected a "
                         f"speculator and --spec-branches 2 or more, got {options.branches}")
    tau = read_tau_curve(drafter_folder(cfg.speculator))
    block = spec_block(cfg, runner.drafter)
    cost = verify_cost(runner, block, cfg.max_batch + options.most_extra_rows(cfg.max_batch))
    draft = draft_cost(runner, block)
    log.info("verify cost (tokens: seconds) %s, drafter pass %.4f s; tau by branches %s",
             dict(zip(cost.xs, cost.ys, strict=True)), draft, dict(zip(tau.xs, tau.ys, strict=True)))
    return WidthRule(tau, cost, fixed=draft)


def respecified(spec: Speculation, options: SpecOptions, mode: str, max_batch: int,
                datastore: bool = True) -> Speculation:
    """`spec` under other options and a fresh `mode` policy, on the same scratch KV and stores
    (`datastore` False: without the datastore branch): bench spec compares configurations on
    one engine. The scratch must hold the extra rows the options may verify at `max_batch`."""
    rows = spec.shadows.max_rows if spec.shadows is not None else 0
    if options.most_extra_rows(max_batch) > rows:
        raise ValueError(f"respecified: {options.branches} branches may verify "
                         f"{options.most_extra_rows(max_batch)} extra rows a step; this "
                         f"engine's scratch holds {rows} (build it for the widest configuration)")
    return replace(spec, options=options, policy=SpecPolicy(mode=mode),
                   store=spec.store if datastore else None)
