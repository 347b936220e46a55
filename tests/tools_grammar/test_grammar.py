"""Token-level matching with the real SmolLM2 tokenizer: masks, verify blocks, bitmask apply."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import torch

from turnspec.tools_grammar.formats import get_format
from turnspec.tools_grammar.grammar import apply_bitmask, unpack_bitmask
from turnspec.tools_grammar.parser import TextDelta, ToolCallDone, ToolCallStreamParser
from turnspec.tools_grammar.schema import ToolChoice, parse_tools

from .conftest import VOCAB_SIZE

TOOLS = parse_tools(
    [
        {"type": "function", "function": {"name": "book_table", "parameters": {
            "type": "object",
            "properties": {
                "party_size": {"type": "integer", "minimum": 1, "maximum": 20},
                "time": {"type": "string", "pattern": "^[0-2][0-9]:[0-5][0-9]$"},
                "name": {"type": "string", "maxLength": 12},
                "seating": {"enum": ["indoor", "patio"]},
                "notes": {"type": ["string", "null"]},
                "high_chairs": {"type": "array", "items": {"type": "integer", "minimum": 0}, "maxItems": 2},
                "deposit": {"type": "number", "minimum": 0, "maximum": 50},
                "vip": {"type": "boolean"},
            },
            "required": ["party_size", "time"],
        }}},
        {"type": "function", "function": {"name": "end_call"}},
    ]
)
ARGS = {"party_size": 4, "time": "19:30", "name": "Zoë", "seating": "patio", "deposit": 12.5}


def ids_of(tok, text: str) -> list[int]:
    return tok(text, add_special_tokens=False)["input_ids"]


def allowed(bitmask: torch.Tensor, row: int = 0) -> np.ndarray:
    return unpack_bitmask(bitmask[row:row + 1], VOCAB_SIZE)[0].numpy()


def test_stop_token_only_where_the_output_may_end(compiler, smollm2_tokenizer) -> None:
    fmt, eos = get_format("hermes"), smollm2_tokenizer.eos_token_id
    matcher = compiler.matcher(TOOLS, ToolChoice("required"), fmt)
    bitmask = matcher.new_bitmask(1)
    for token in ids_of(smollm2_tokenizer, fmt.render_call("book_table", ARGS)):
        matcher.fill_mask(bitmask, 0)
        row = allowed(bitmask)
        assert row[token] and not row[eos]
        assert matcher.accept(token)
    matcher.fill_mask(bitmask, 0)
    assert np.flatnonzero(allowed(bitmask)).tolist() == [eos]
    assert matcher.is_completed() and not matcher.is_terminated()
    assert matcher.accept(eos) and matcher.is_terminated()
    with pytest.raises(RuntimeError, match="already accepted a stop token"):
        matcher.fill_mask(bitmask, 0)


def test_auto_mode_allows_stop_after_text(compiler, smollm2_tokenizer) -> None:
    matcher = compiler.matcher(TOOLS, ToolChoice("auto"), get_format("hermes"))
    assert matcher.accept_tokens(ids_of(smollm2_tokenizer, "Sure, four people.")) == 4 or matcher.is_completed()
    assert matcher.accept(smollm2_tokenizer.eos_token_id)


def test_refused_token_leaves_state_and_rollback_undoes(compiler, smollm2_tokenizer) -> None:
    fmt = get_format("llama3_json")
    matcher = compiler.matcher(TOOLS, ToolChoice("function", "end_call"), fmt)
    text = ids_of(smollm2_tokenizer, "Hello")
    assert not matcher.accept(text[0])
    good = ids_of(smollm2_tokenizer, fmt.render_call("end_call", {}))
    assert matcher.accept_tokens(good[:3]) == 3
    matcher.rollback(3)
    assert matcher.accept_tokens(good) == len(good)
    assert matcher.accept(smollm2_tokenizer.eos_token_id)


def test_verify_block_rows_match_step_by_step(compiler, smollm2_tokenizer) -> None:
    fmt, eos = get_format("hermes"), smollm2_tokenizer.eos_token_id
    tokens = ids_of(smollm2_tokenizer, fmt.render_call("book_table", ARGS))
    matcher = compiler.matcher(TOOLS, ToolChoice("required"), fmt)
    assert matcher.accept_tokens(tokens[:5]) == 5
    drafts = tokens[5:20]
    reference = matcher.new_bitmask(len(drafts) + 1)
    for k, token in enumerate([*drafts, None]):
        matcher.fill_mask(reference, k)
        if token is not None:
            assert matcher.accept(token)
    matcher.rollback(len(drafts))

    block = matcher.new_bitmask(len(drafts) + 3)
    assert matcher.fill_block_masks(drafts, block, row_offset=2) == len(drafts) + 1
    assert torch.equal(block[2:], reference)
    assert matcher.accept_tokens(tokens[5:]) == len(tokens) - 5  # state was unchanged

    # A refused draft: rows up to it are real masks, the rest all-allowed.
    matcher.rollback(len(tokens) - 5)
    bad = [*drafts[:4], ids_of(smollm2_tokenizer, "}")[0], *drafts[5:]]
    block.zero_()
    assert matcher.fill_block_masks(bad, block) == 5
    assert torch.equal(block[:5], reference[:5])
    assert bool((block[5:len(bad) + 1] == -1).all())

    # A stop token ends the block: nothing after it is needed.
    matcher.accept_tokens(tokens[5:])
    tail = [eos, 17, 18]
    rows = matcher.new_bitmask(4)
    assert matcher.fill_block_masks(tail, rows) == 1
    assert np.flatnonzero(allowed(rows)).tolist() == [eos]
    with pytest.raises(ValueError, match="need 4"):
        matcher.fill_block_masks(tail, matcher.new_bitmask(3))
    # A lone position (no drafts) is plain decoding; a draft outside the vocabulary is refused.
    matcher.rollback(len(tokens) - 5)
    one = matcher.new_bitmask(1)
    assert matcher.fill_block_masks([], one) == 1 and torch.equal(one[0], reference[0])
    assert matcher.fill_block_masks([VOCAB_SIZE + 5, drafts[0]], matcher.new_bitmask(3)) == 1


def test_apply_bitmask_bans_padding_columns(compiler, smollm2_tokenizer) -> None:
    matcher = compiler.matcher(TOOLS, ToolChoice("function", "end_call"), get_format("hermes"))
    bitmask = matcher.new_bitmask(2)
    matcher.fill_mask(bitmask, 0)
    bitmask[1] = -1
    logits = torch.randn(2, VOCAB_SIZE + 64)  # a model whose vocabulary is padded
    before = logits.clone()
    apply_bitmask(logits, bitmask)
    ok = torch.from_numpy(allowed(bitmask))
    assert torch.equal(logits[0, :VOCAB_SIZE][ok], before[0, :VOCAB_SIZE][ok])
    assert bool(torch.isinf(logits[0, :VOCAB_SIZE][~ok]).all()) and int(ok.sum()) >= 1
    assert torch.equal(logits[1, :VOCAB_SIZE], before[1, :VOCAB_SIZE])
    assert bool(torch.isinf(logits[:, VOCAB_SIZE:]).all())
    with pytest.raises(ValueError, match="expected logits"):
        apply_bitmask(logits[:1], bitmask)
    # rows=: only those rows, padding columns included; the others are left as they are
    logits = before.clone()
    apply_bitmask(logits, bitmask.flip(0), rows=[1])
    assert torch.equal(logits[0], before[0])
    assert bool(torch.isinf(logits[1, :VOCAB_SIZE][~ok]).all()) and bool(torch.isinf(logits[1, VOCAB_SIZE:]).all())
    with pytest.raises(ValueError, match="rows must index"):
        apply_bitmask(logits, bitmask, rows=[2])


def test_compile_cache_and_unconstrained(compiler) -> None:
    fmt = get_format("hermes")
    assert compiler.matcher(TOOLS, ToolChoice("none"), fmt) is None
    assert compiler.matcher([], ToolChoice("auto"), fmt) is None
    misses = compiler.misses
    compiler.compile(TOOLS, ToolChoice("function", "book_table"), fmt)
    same_tools = parse_tools([t.to_openai() for t in TOOLS])
    hits = compiler.hits
    compiler.compile(same_tools, ToolChoice("function", "book_table"), fmt)
    assert (compiler.misses, compiler.hits) == (misses + 1, hits + 1)
    compiler.compile(TOOLS, ToolChoice("function", "book_table"), get_format("llama3_json"))
    assert compiler.misses == misses + 2


@pytest.mark.parametrize("fmt_name", ["hermes", "llama3_json"])
@pytest.mark.parametrize("choice", [ToolChoice("auto"), ToolChoice("required"), ToolChoice("function", "book_table")])
def test_random_walks_always_parse_to_text_or_a_valid_call(compiler, smollm2_tokenizer, fmt_name, choice) -> None:
    """A 'model' that samples any allowed token (biased toward short ones so walks end) must
    only ever produce plain text or one call that validates: the grammar admits nothing else."""
    tok, eos = smollm2_tokenizer, smollm2_tokenizer.eos_token_id
    short = _short_tokens(tok)
    rng = random.Random(f"{fmt_name}-{choice.mode}")
    # In auto mode half the walks are steered into a call, so that path is exercised too.
    lead = ids_of(tok, "Okay. <tool_call>" if fmt_name == "hermes" else '{"name":"')
    finished = calls = 0
    for walk in range(10):
        matcher = compiler.matcher(TOOLS, choice, get_format(fmt_name))
        bitmask, out = matcher.new_bitmask(1), []
        if choice.mode == "auto" and walk % 2:
            assert matcher.accept_tokens(lead) == len(lead)
            out += lead
        while not matcher.is_terminated() and len(out) < 300:
            matcher.fill_mask(bitmask, 0)
            row = allowed(bitmask)
            pool = np.flatnonzero(row & short) if rng.random() < 0.9 else np.flatnonzero(row)
            token = eos if row[eos] and rng.random() < 0.5 else int(rng.choice(list(pool) or list(np.flatnonzero(row))))
            assert matcher.accept(token)
            out.append(token)
        if not matcher.is_terminated():
            continue  # cut at the length limit, like max_tokens: not a grammar outcome
        finished += 1
        parser = ToolCallStreamParser(fmt_name, TOOLS)
        events = parser.feed(tok.decode(out[:-1])) + parser.finish()
        kinds = {type(e) for e in events}
        assert kinds <= {TextDelta, ToolCallDone} | _call_progress(), events
        done = [e for e in events if isinstance(e, ToolCallDone)]
        calls += len(done)
        if choice.mode != "auto":
            assert len(done) == 1 and json.loads(done[0].arguments_json) == done[0].arguments
        if choice.mode == "function":
            assert done[0].name == "book_table"
    assert finished >= 5 and calls >= 3, (finished, calls)


def _call_progress() -> set[type]:
    from turnspec.tools_grammar.parser import ToolCallArgumentsDelta, ToolCallStarted

    return {ToolCallStarted, ToolCallArgumentsDelta}


_SHORT: dict[int, np.ndarray] = {}


def _short_tokens(tok) -> np.ndarray:
    """Tokens of at most one character: structure (quotes, braces, digits) and byte pieces."""
    if id(tok) not in _SHORT:
        vocab = tok.convert_ids_to_tokens(list(range(VOCAB_SIZE)))
        _SHORT[id(tok)] = np.array([len(t) <= 1 for t in vocab])
    return _SHORT[id(tok)]


def test_jump_forward_tokens_are_the_forced_text(compiler, smollm2_tokenizer) -> None:
    """With a named function the whole call prefix is forced: free draft tokens for the engine."""
    fmt = get_format("hermes")
    matcher = compiler.matcher(TOOLS, ToolChoice("function", "book_table"), fmt)
    forced = matcher.jump_forward_tokens()
    text = smollm2_tokenizer.decode(forced)
    assert text.startswith(fmt.call_prefix("book_table")) and fmt.render_call("book_table", ARGS).startswith(text)
    assert matcher.accept_tokens(forced) == len(forced)
