"""Budget-aware tool calls without a model: the closing path is a valid call, and a writer that
picks adversarially among the tokens the steered mask allows (never a closing token while
anything else is allowed) still closes a valid call within every budget that holds the
closing path from the start, for the workload's tools and the dental tools."""

from __future__ import annotations

import json
import random

import pytest

from turnspec.benchmarks.voice_turns import DENTAL_TOOLS
from turnspec.tools_grammar.closing import CloseVocab, few_allowed
from turnspec.tools_grammar.compiler import GrammarCompiler
from turnspec.tools_grammar.formats import get_format
from turnspec.tools_grammar.grammar import unpack_bitmask
from turnspec.tools_grammar.parser import ToolCallDone, ToolCallStreamParser
from turnspec.tools_grammar.schema import parse_tool_choice, parse_tools
from turnspec.workloads.catalog import load_tools

FMT = get_format("hermes")


def _calls(tok, ids: list[int], tools) -> list[ToolCallDone]:
    parser = ToolCallStreamParser(FMT, tools)
    events = parser.feed(tok.decode(ids, skip_special_tokens=True)) + parser.finish()
    return [e for e in events if isinstance(e, ToolCallDone)]


def _adversary(compiler: GrammarCompiler, tools, choice, budget: int, seed: int,
               steer: bool = True) -> list[int]:
    """Writes up to `budget` tokens, each a random allowed one, avoiding the stop token and
    closing quotes/braces whenever the (steered) mask allows anything else."""
    m = compiler.matcher(tools, choice, FMT)
    vocab = compiler.closer().vocab
    avoid = set(vocab.stop_ids) | set(vocab.closers)
    rng, bitmask, out = random.Random(seed), m.new_bitmask(1), []
    for remaining in range(budget, 0, -1):
        m.fill_mask(bitmask, 0, remaining=remaining if steer else None)
        allowed = unpack_bitmask(bitmask, compiler.vocab_size)[0].nonzero().flatten().tolist()
        others = [t for t in allowed if t not in avoid]
        token = rng.choice(others or allowed)
        assert m.accept(token)
        out.append(token)
        if token in vocab.stop_ids:
            break
    return out


@pytest.mark.parametrize("domain", ["clinic", "bank", "ride_hailing", "dental"])
def test_adversarial_writer_closes_within_the_budget(compiler, smollm2_tokenizer, domain) -> None:
    raw = DENTAL_TOOLS if domain == "dental" else load_tools(domain)
    tools = parse_tools(raw)
    for choice in (parse_tool_choice("required", tools),
                   parse_tool_choice({"type": "function", "name": tools[-1].name}, tools)):
        fresh = compiler.matcher(tools, choice, FMT)
        shortest = len(compiler.closer().path(fresh._matcher))
        for budget in sorted({shortest, shortest + 3, 64}):
            if budget < shortest:
                continue
            ids = _adversary(compiler, tools, choice, budget, seed=budget)
            assert len(ids) <= budget and ids[-1] in compiler.stop_token_ids, (domain, budget)
            calls = _calls(smollm2_tokenizer, ids, tools)
            assert len(calls) == 1, smollm2_tokenizer.decode(ids)
            assert isinstance(json.loads(calls[0].arguments_json), dict)
            if choice.mode == "function":
                assert calls[0].name == choice.name


def test_without_steering_the_adversary_is_cut(compiler) -> None:
    """The same writer with plain masks pads the first free string and never closes."""
    tools = parse_tools(DENTAL_TOOLS)
    ids = _adversary(compiler, tools, parse_tool_choice("required", tools), 64, seed=1,
                     steer=False)
    assert len(ids) == 64 and ids[-1] not in compiler.stop_token_ids


def test_closing_path_is_a_valid_call_and_leaves_the_matcher_alone(compiler,
                                                                   smollm2_tokenizer) -> None:
    tools = parse_tools(DENTAL_TOOLS)
    m = compiler.matcher(tools, parse_tool_choice("required", tools), FMT)
    prefix = smollm2_tokenizer.encode(
        '<tool_call>\n{"name":"book_appointment","arguments":{"name":"Jo', add_special_tokens=False)
    assert m.accept_tokens(prefix) == len(prefix)
    path = compiler.closer().path(m._matcher)
    assert path is not None and path[-1] in compiler.stop_token_ids
    (call,) = _calls(smollm2_tokenizer, prefix + path, tools)
    assert json.loads(call.arguments_json) == {"name": "Jo", "day": "", "time": ""}
    assert not m.is_completed()  # the path was walked on a fork
    assert m.accept_tokens(path) == len(path) and m.is_terminated()


def test_few_allowed_reads_bits_exactly() -> None:
    import numpy as np

    words = np.zeros(8, dtype=np.int32)
    for t in (0, 31, 33, 200):
        words[t >> 5] |= (1 << (t & 31)) - (1 << 32 if t & 31 == 31 else 0)
    assert few_allowed(words, 256).tolist() == [0, 31, 33, 200]
    assert few_allowed(words, 100).tolist() == [0, 31, 33]  # past the vocabulary: not tokens
    assert few_allowed(np.full(64, -1, dtype=np.int32), 2048) is None


def test_vocab_tables(smollm2_tokenizer) -> None:
    vocab = CloseVocab([b"a", b'"', b"}", b"]", b'",', b"<|im_end|>"], 8, [5],
                       lambda s: smollm2_tokenizer.encode(s, add_special_tokens=False))
    assert vocab.closers == [1, 2, 3] and vocab.quote == 1
    assert vocab.quote_free.tolist()[:6] == [True, False, True, True, False, True]
    assert vocab.lengths.tolist() == [1, 1, 1, 1, 2, 10, 0, 0]
