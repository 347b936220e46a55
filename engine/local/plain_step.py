"""The embedded engine's steps without speculation, beside spec_step.py: a prefill step (the
prompt's new tokens, the first token sampled) and a plain decode step (one token a row). Both
keep the drafter's context rows current, so a row may speculate from its next step on. One host
sync each: the sampled tokens.
"""

from __future__ import annotations

import torch

from turnspec.engine.local.grammar_mask import mask_next
from turnspec.engine.local.runner import ModelRunner
from turnspec.engine.local.sampling import sample_rows
from turnspec.engine.local.sequence import Sequence
from turnspec.engine.local.spec_policy import SpecPolicy


def prefill_step(runner: ModelRunner, seqs: list[Sequence]) -> tuple[list[list[int]], list[int]]:
    """Each sequence's uncomputed tokens through the target: (the first token sampled after
    them, how far each row's computed KV advances)."""
    rows = [(s, s.token_ids[s.num_computed:]) for s in seqs]
    out = runner.extend(rows)
    last = torch.tensor([len(t) - 1 for _, t in rows], device=out.hidden.device)
    hidden = out.hidden[torch.arange(len(rows), device=last.device), last]  # [b, H]
    logits = runner.logits(hidden)
    if out.taps is not None:
        runner.store_context([(s, r, s.num_computed, len(t)) for r, (s, t) in enumerate(rows)],
                             out.taps)
    for s, t in rows:
        if not s.timing.prefill_tokens:
            s.timing.prefill_tokens = len(t)
    tokens = sample_next(seqs, logits)
    return [[t] for t in tokens], [len(t) for _, t in rows]


def decode_step(runner: ModelRunner, policy: SpecPolicy,
                seqs: list[Sequence]) -> tuple[list[list[int]], list[int]]:
    """One token for each sequence from its pending one; the policy counts a plain step."""
    out = runner.extend([(s, [s.token_ids[-1]]) for s in seqs])
    logits = runner.logits(out.hidden[:, 0])
    if out.taps is not None:
        runner.store_context([(s, r, s.num_computed, 1) for r, s in enumerate(seqs)], out.taps)
    tokens = sample_next(seqs, logits)
    for s in seqs:
        policy.after_plain_step(s)
    return [[t] for t in tokens], [1] * len(seqs)


def sample_next(seqs: list[Sequence], logits: torch.Tensor) -> list[int]:
    """logits [b, V] fp32 -> one token per sequence (grammar-masked). The step's host sync."""
    mask_next(seqs, logits)
    tokens = sample_rows(logits, [s.request.sampling for s in seqs], [s.generator for s in seqs])
    return tokens.tolist()
