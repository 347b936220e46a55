"""One step masks its batch at once (engine/local/grammar_mask.py): with the real SmolLM2
tokenizer and tool grammars, every grammar row gets exactly the mask its own matcher gives,
rows without a grammar are left alone, and the matchers do not move."""

from __future__ import annotations

import pytest
import torch

from tests.conftest import VOCAB_SIZE
from turnspec.engine.local.grammar_mask import mask_block_rows, mask_rows
from turnspec.tools_grammar.formats import get_format
from turnspec.tools_grammar.grammar import apply_bitmask
from turnspec.tools_grammar.schema import ToolChoice, parse_tools

TOOLS = parse_tools([
    {"type": "function", "function": {"name": "check_order", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}},
    {"type": "function", "function": {"name": "end_call"}},
])


def _matchers(compiler, tokenizer):
    """A required call two tokens in, an auto-mode turn at its start, and a named call."""
    fmt = get_format("hermes")
    call = tokenizer(fmt.render_call("check_order", {"order_id": "A17"}), add_special_tokens=False)["input_ids"]
    required = compiler.matcher(TOOLS, ToolChoice("required"), fmt)
    assert required.accept_tokens(call[:2]) == 2
    auto = compiler.matcher(TOOLS, ToolChoice("auto"), fmt)
    named = compiler.matcher(TOOLS, ToolChoice("function", "end_call"), fmt)
    return [required, auto, named], call


def _alone(matcher, remaining: int, logits_row: torch.Tensor) -> torch.Tensor:
    """The row masked by its matcher alone (what a step did per row before)."""
    bitmask = matcher.new_bitmask(1)
    matcher.fill_mask(bitmask, 0, remaining=remaining)
    out = logits_row.clone().unsqueeze(0)
    apply_bitmask(out, bitmask)
    return out[0]


def test_a_mixed_batch_is_masked_row_by_row(compiler, smollm2_tokenizer) -> None:
    (required, auto, named), _ = _matchers(compiler, smollm2_tokenizer)
    grammars = [required, None, auto, named, None]
    remaining = [40, 40, 64, 3, 9]
    logits = torch.randn(len(grammars), VOCAB_SIZE)
    before = logits.clone()
    mask_rows(grammars, remaining, logits)
    for r, g in enumerate(grammars):
        expected = before[r] if g is None else _alone(g, remaining[r], before[r])
        assert torch.equal(logits[r], expected), f"row {r}"
    assert bool(torch.isinf(logits[0]).any())  # a call in progress bans most of the vocabulary
    # every row with a grammar: one kernel over all of them
    logits = before.clone()
    mask_rows([required, auto, named], remaining[:3], logits[:3])
    assert torch.equal(logits[1], _alone(auto, 40, before[1]))
    with pytest.raises(ValueError, match="expected logits"):
        mask_rows([required], [40, 40], logits[:1])


def test_a_verify_block_batch_matches_each_rows_block(compiler, smollm2_tokenizer) -> None:
    (required, auto, named), call = _matchers(compiler, smollm2_tokenizer)
    block = 6
    drafts = [call[2:2 + block - 1], [0] * (block - 1), [-1] * (block - 1)]
    grammars, remaining = [required, None, named], [50, 50, 2]
    logits = torch.randn(len(grammars), block, VOCAB_SIZE)
    before = logits.clone()
    mask_block_rows(grammars, remaining, logits, drafts)
    assert torch.equal(logits[1], before[1])
    for r in (0, 2):
        bitmask = grammars[r].new_bitmask(block)
        grammars[r].fill_block_masks(drafts[r], bitmask, remaining=remaining[r])
        expected = before[r].clone()
        apply_bitmask(expected, bitmask)
        assert torch.equal(logits[r], expected), f"row {r}"
    # the matchers did not move: the rest of the call is still accepted from where it stood
    assert required.accept_tokens(call[2:]) == len(call) - 2
    with pytest.raises(ValueError, match="draft rows"):
        mask_block_rows(grammars, remaining, logits, drafts[:2])


def test_free_text_rows_are_not_applied_and_calls_still_are(compiler, smollm2_tokenizer) -> None:
    (required, auto, _), call = _matchers(compiler, smollm2_tokenizer)
    text = smollm2_tokenizer("Sure, your order is on its way.", add_special_tokens=False)["input_ids"]
    bitmask = auto.new_bitmask(2)
    assert auto.fill_mask(bitmask, 0) is False          # free text: every token allowed
    assert required.fill_mask(bitmask, 1) is True       # inside a call: most tokens banned
    # a verify block of free text leaves the logits as they were, bit for bit
    block = len(text) + 1
    logits = torch.randn(1, block, VOCAB_SIZE)
    before = logits.clone()
    mask_block_rows([auto], [64], logits, [text])
    assert torch.equal(logits, before)
    # drafts that open a call: the positions inside it are masked exactly as the matcher says
    drafts = text + call
    block = len(drafts) + 1
    logits = torch.randn(1, block, VOCAB_SIZE)
    before = logits.clone()
    mask_block_rows([auto], [64], logits, [drafts])
    bitmask = auto.new_bitmask(block)
    auto.fill_block_masks(drafts, bitmask)
    expected = before[0].clone()
    apply_bitmask(expected, bitmask)
    assert torch.equal(logits[0], expected)
    assert torch.equal(logits[0, : len(text) + 1], before[0, : len(text) + 1])
    assert bool(torch.isinf(logits[0, len(text) + 2]).any())


def test_columns_past_the_grammars_vocabulary_are_banned_even_on_free_text(compiler, smollm2_tokenizer) -> None:
    (_, auto, _), _ = _matchers(compiler, smollm2_tokenizer)
    padded = torch.randn(2, VOCAB_SIZE + 64)             # an LM head padded past the tokenizer
    before = padded.clone()
    mask_rows([auto, None], [64, 64], padded)
    assert bool(torch.isinf(padded[0, VOCAB_SIZE:]).all())
    assert torch.equal(padded[0, :VOCAB_SIZE], before[0, :VOCAB_SIZE])
    assert torch.equal(padded[1], before[1])
    blocks = torch.randn(1, 3, VOCAB_SIZE + 64)
    mask_block_rows([auto], [64], blocks, [[]])
    assert bool(torch.isinf(blocks[0, :, VOCAB_SIZE:]).all())
