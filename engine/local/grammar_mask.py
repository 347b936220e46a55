"""Grammar masking of target logits (tool calls): at every sampled position, and at every
position of a speculative verify block (the matcher advances over the drafts to build each
row's mask, then rolls back; committed tokens are accepted in postprocess). Each mask is given
the tokens the request has left there, so a required/named call closes within max_tokens
(tools_grammar/closing.py); row k of a block has k fewer, as plain decoding would.

One step masks its whole batch at once: every grammar row is filled into one CPU bitmask, which
goes to the logits' device in one copy and is applied by one kernel over just those rows (rows
without a grammar are not touched). Masked a row at a time, a batch of 256 tool turns paid 256
copies and 256 kernel launches (Triton, on CUDA) a step; `turnspec bench mask` times both ways.
Rows whose mask allows every token (free text under tool_choice auto: most of a voice turn) are
left out of the apply, and a step with none left copies and launches nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from turnspec.engine.local.sequence import Sequence

if TYPE_CHECKING:  # xgrammar loads on the first masked step, not with the engine
    from turnspec.tools_grammar.grammar import ToolGrammarMatcher


def mask_next(seqs: list[Sequence], logits: torch.Tensor) -> None:
    """logits [b, V] fp32, masked in place for rows whose request carries a grammar."""
    mask_rows([s.request.grammar for s in seqs], [s.remaining for s in seqs], logits)


def mask_rows(grammars: list[ToolGrammarMatcher | None], remaining: list[int],
              logits: torch.Tensor) -> None:
    """logits [b, V] fp32: row r masked in place by grammars[r]'s next-token mask (None: left as
    it is), steered to close within remaining[r] tokens."""
    if logits.dim() != 2 or len(grammars) != logits.shape[0] or len(remaining) != len(grammars):
        raise ValueError(f"mask_rows: expected logits [b, V] and b grammars and budgets, got "
                         f"{tuple(logits.shape)}, {len(grammars)} and {len(remaining)}")
    rows = [r for r, g in enumerate(grammars) if g is not None]
    if not rows:
        return
    from turnspec.tools_grammar.grammar import apply_bitmask

    bitmask = grammars[rows[0]].new_bitmask(len(grammars))
    masked = [r for r in rows if grammars[r].fill_mask(bitmask, r, remaining=remaining[r])]
    if _pads_past(bitmask, logits.shape[-1]):  # columns past the grammar's vocabulary get banned
        masked = rows
    if masked:
        apply_bitmask(logits, bitmask, rows=None if len(masked) == len(grammars) else masked)


def mask_block(seqs: list[Sequence], logits: torch.Tensor, drafts: list[list[int]]) -> None:
    """logits [b, B, V] fp32; row r position k is masked by the grammar state after accepting
    drafts[r][:k]. The matchers are left unchanged."""
    mask_block_rows([s.request.grammar for s in seqs], [s.remaining for s in seqs], logits, drafts)


def mask_block_rows(grammars: list[ToolGrammarMatcher | None], remaining: list[int],
                    logits: torch.Tensor, drafts: list[list[int]]) -> None:
    """logits [b, B, V] fp32: position k of row r masked in place by grammars[r] after
    drafts[r][:k] (None: row left as it is), position k steered with remaining[r] - k tokens."""
    if logits.dim() != 3 or not len(grammars) == len(remaining) == len(drafts) == logits.shape[0]:
        raise ValueError(f"mask_block_rows: expected logits [b, B, V] and b grammars, budgets and "
                         f"draft rows, got {tuple(logits.shape)}, {len(grammars)}, {len(remaining)} "
                         f"and {len(drafts)}")
    b, block, vocab = logits.shape
    rows = [r for r, g in enumerate(grammars) if g is not None]
    if not rows:
        return
    from turnspec.tools_grammar.grammar import apply_bitmask

    bitmask = grammars[rows[0]].new_bitmask(b * block)
    for r in rows:
        grammars[r].fill_block_masks(drafts[r][: block - 1], bitmask, row_offset=r * block,
                                     remaining=remaining[r])
    # rows left all-allowed (free text, rows past a refused draft, rows without a grammar) are
    # skipped: one numpy check over the bitmask (new_bitmask starts with every bit set; numpy,
    # because torch's CPU dispatch costs ~5x more than the check on arrays this small)
    if _pads_past(bitmask, vocab):
        masked = [r * block + k for r in rows for k in range(block)]
    else:
        masked = np.flatnonzero((bitmask.numpy() != -1).any(axis=1)).tolist()
    if not masked:
        return
    flat = logits.view(b * block, vocab)  # a view: masked in place (fails, never copies, if strided)
    apply_bitmask(flat, bitmask, rows=None if len(masked) == b * block else masked)


def _pads_past(bitmask: torch.Tensor, vocab: int) -> bool:
    """True when the logits are wider than the bitmask covers (a padded LM head): apply_bitmask
    bans those columns, so no grammar row may be skipped as all-allowed."""
    return vocab > bitmask.shape[1] * 32
