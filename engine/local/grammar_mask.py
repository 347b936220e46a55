"""Grammar masking of target logits (tool calls): at every sampled position, and at every
position of a speculative verify block (the matcher advances over the drafts to build each
row's mask, then rolls back; committed tokens are accepted in postprocess). Each mask is given
the tokens the request has left there, so a required/named call closes within max_tokens
(tools_grammar/closing.py); row k of a block has k fewer, as plain decoding would."""

from __future__ import annotations

import torch

from turnspec.engine.local.sequence import Sequence


def mask_next(seqs: list[Sequence], logits: torch.Tensor) -> None:
    """logits [b, V] fp32, masked in place for rows whose request carries a grammar."""
    for r, seq in enumerate(seqs):
        g = seq.request.grammar
        if g is None:
            continue
        from turnspec.tools_grammar.grammar import apply_bitmask

        bitmask = g.new_bitmask(1)
        g.fill_mask(bitmask, 0, remaining=seq.remaining)
        apply_bitmask(logits[r:r + 1], bitmask.to(logits.device))


def mask_block(seqs: list[Sequence], logits: torch.Tensor, drafts: list[list[int]]) -> None:
    """logits [b, B, V] fp32; row r position k is masked by the grammar state after accepting
    drafts[r][:k]. The matcher is left unchanged."""
    block = logits.shape[1]
    for r, seq in enumerate(seqs):
        g = seq.request.grammar
        if g is None:
            continue
        from turnspec.tools_grammar.grammar import apply_bitmask

        bitmask = g.new_bitmask(block)
        g.fill_block_masks(drafts[r][: block - 1], bitmask, remaining=seq.remaining)
        apply_bitmask(logits[r], bitmask.to(logits.device))
