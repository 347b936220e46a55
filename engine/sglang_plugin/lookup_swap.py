"""Step A of turnspec's speculator inside SGLang: each greedy row verifies the speculation
core's chosen block in place of the drafter's, in DFLASH's own linear verify (same width, so
its CUDA graphs stay as captured).

Called just before the target verify is prepared, after the drafter ran. Two forms of one plan:
- `swap_on_device` (plan_at "device", the default): the lookup over each request's tokens kept
  on the GPU and the planner's rule, in one kernel (kernels/plan_lookup.py `choose`; its torch
  reference off CUDA); the host never waits for the GPU;
- `swap_blocks` (plan_at "verify"): the drafter's block, its probabilities and each row's
  committed tokens go to the host planner (engine/spec/planner.py, the rule the embedded engine
  and the τ replay use). The tests pin the two to the same blocks.
Where the plan picks the prompt-lookup continuation, the row's block is overwritten in place.
DFLASH's accept reads the same buffer as its candidates, so what is verified is what is accepted
from: lossless for any block.

Rows under a grammar (tool calls) are planned too when the step has one: the plan runs where
DFLASH copies the blocks to the host for its grammar walk (`GrammarTree.from_linear_chain`,
hooks.py), so the vocabulary masks are built along the block that is verified, and a token the
grammar refuses stops the accept there as it does for a drafter's token. Where the blocks are
already on their way to the host (no such hook ran), grammar rows keep the drafter's block.
Rows left alone: sampled rows (one block each, and DFLASH's sampled accept stays as stock) and
rows with penalties (applied from the block's prefix).
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from turnspec.engine.sglang_plugin.state import STATE, StepContext, on_device, sync_free
from turnspec.engine.spec.planner import LOOKUP_AGREE, LOOKUP_MATCH, RowInput, plan_step
from turnspec.engine.spec.proposers.drafter import blocks_from
from turnspec.kernels.plan_lookup import choose


def swappable(req: Any, grammar_ok: bool = False) -> bool:
    """A greedy row with no penalties, and no grammar unless `grammar_ok` (the grammar's masks
    are still to be built from the block)."""
    sp = req.sampling_params
    greedy = sp.top_k <= 1 or sp.temperature == 0
    return greedy and (grammar_ok or req.grammar is None) and sp.frequency_penalty == 0 \
        and sp.presence_penalty == 0 and sp.repetition_penalty == 1


def history(req: Any, pending: list[int] | None) -> list[int]:
    """The row's tokens so far: the scheduler's record, plus `pending` (the last step's
    commits) where the record does not hold them yet."""
    tokens = list(req.origin_input_ids)
    tokens.extend(req.output_ids)
    if pending and tokens[-len(pending):] != pending:
        tokens += pending
    return tokens


def committed(req: Any, pending: list[int] | None, anchor: int) -> list[int] | None:
    """The row's `history`, if it ends with the block's anchor (the last committed token)."""
    tokens = history(req, pending)
    return tokens if tokens and tokens[-1] == anchor else None


def drafter_top(step: StepContext, bs: int, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The drafter's top tokens and log-probabilities [bs, width, k+1] this step: from its
    eager head, else from the sampler's buffers the draft CUDA graph wrote."""
    if step.eager_top is not None:
        ids, lp = step.eager_top
    else:
        sampler = step.worker._draft_sampler
        ids, lp = sampler.top_ids[: bs * width], sampler.top_lp[: bs * width]
    return ids.view(bs, width, -1), lp.view(bs, width, -1)


def swap_blocks(step: StepContext, blocks: torch.Tensor, grammar_ok: bool = False) -> None:
    """Overwrite, in `blocks` [bs, 1 + width] (anchor, drafts: the buffer DFLASH verifies and
    accepts from), the rows whose chosen block is not the drafter's (module doc)."""
    reqs = step.batch.reqs
    bs, width = len(reqs), int(blocks.shape[1]) - 1
    ok = [swappable(r, grammar_ok) for r in reqs]
    if width < 1 or not any(ok):
        return
    _, lp = drafter_top(step, bs, width)
    drafted = blocks_from(blocks[:, 1:], [width] * bs, lp[..., 0].float().exp())  # host sync
    anchors = blocks[:, 0].tolist()
    pending = STATE.take_pending()
    rows = []
    for i, req in enumerate(reqs):
        tokens = committed(req, pending.get(req.rid), anchors[i]) if ok[i] else None
        STATE.stats["history_misses"] += ok[i] and tokens is None
        rows.append(RowInput(tokens or [anchors[i]], width if tokens else 0, True))
    plan = plan_step(rows, drafted, STATE.options, STATE.lookup)
    changed = [i for i in range(bs) if plan.blocks[i] != drafted.drafts[i]]
    STATE.stats["rows_planned"] += sum(1 for r in rows if r.width)
    STATE.stats["rows_swapped"] += len(changed)
    STATE.stats["grammar_rows_swapped"] += sum(reqs[i].grammar is not None for i in changed)
    if changed:  # a shorter continuation keeps the drafter's tokens after it (any token is lossless)
        new = [[t if t >= 0 else d for t, d in zip(plan.blocks[i], drafted.argmax[i], strict=True)]
               for i in changed]
        idx = torch.tensor(changed, device=blocks.device)
        blocks[idx, 1:] = torch.tensor(new, dtype=blocks.dtype).to(blocks.device)


def row_flags(ok: list[bool], grammar: list[bool], device: torch.device) -> torch.Tensor:
    """[b, 2] int32 on `device` (may plan, under a grammar): the only host-to-device copy of a
    device-planned step, pinned so it does not wait, and made once for each batch's pattern (a
    steady batch repeats it every step). Shared: read, never written."""
    return _flags(tuple(ok), tuple(grammar), torch.device(device))


@functools.lru_cache(maxsize=256)
def _flags(ok: tuple[bool, ...], grammar: tuple[bool, ...], device: torch.device) -> torch.Tensor:
    if len(ok) != len(grammar):
        raise ValueError(f"expected a grammar flag a row, got {len(ok)} rows and {len(grammar)}")
    return on_device([[o, g] for o, g in zip(ok, grammar, strict=True)], torch.int32, device)


@sync_free
def swap_on_device(step: StepContext, blocks: torch.Tensor, grammar_ok: bool = False) -> None:
    """`swap_blocks` without the host (plan_at "device"): each row's lookup continuation is
    found on the GPU over the tokens kept there (history.py) and the planner's rule picks
    between it and the drafter's block there too, in one kernel (kernels/plan_lookup.py; its
    torch reference off CUDA). The host sends only which rows may be planned; a row whose kept
    tokens do not end at the block's anchor keeps the drafter's block."""
    reqs, hist = step.batch.reqs, STATE.history
    bs, width = len(reqs), int(blocks.shape[1]) - 1
    ok = [swappable(r, grammar_ok) for r in reqs]
    if width < 1 or not any(ok) or hist is None:
        return
    STATE.stats["rows_planned"] += sum(ok)
    dev = blocks.device
    flags = row_flags(ok, [r.grammar is not None for r in reqs], dev)
    _, lp = drafter_top(step, bs, width)
    choose(hist.tokens, hist.lengths, step.batch.req_pool_indices, blocks,
         lp[..., 0].reshape(-1).float(), flags, STATE.device_counts(dev)[:3],
         below=STATE.options.lookup_below, agree=LOOKUP_AGREE, match_min=LOOKUP_MATCH)
