"""The tool-call validity bench: scoring, the harness, and grammar-constrained output on
held-out workload turns (a random-walk 'model' over the real SmolLM2 tokenizer and grammar)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np

from tests.conftest import VOCAB_SIZE
from turnspec.benchmarks import tool_calls
from turnspec.benchmarks.tool_calls import (
    evaluate_tool_calls,
    reference_output,
    score_output,
    select_turns,
)
from turnspec.cli.main import main
from turnspec.tools_grammar.formats import get_format
from turnspec.tools_grammar.grammar import unpack_bitmask
from turnspec.tools_grammar.schema import parse_tool_choice, parse_tools


def test_select_turns_is_deterministic_heldout_tool_calls() -> None:
    turns = select_turns(30, seed=0)
    assert len(turns) == 30 and {t.kind for t in turns} == {"tool_call"} and {t.split for t in turns} == {"heldout"}
    assert [tool_calls.turn_id(t) for t in turns] == [tool_calls.turn_id(t) for t in select_turns(30, seed=0)]
    assert {t.kind for t in select_turns(10, kind="text")} == {"text"}


def test_score_output_classifies() -> None:
    (turn,) = select_turns(1)
    fmt = get_format("hermes")
    good = score_output(reference_output(turn, fmt), turn, fmt)
    assert good.kind == "call" and good.names == (good.expected_name,)
    chunks = list(reference_output(turn, fmt))  # streamed one character at a time
    assert score_output(chunks, turn, fmt).kind == "call"
    assert score_output("Sure, one moment.", turn, fmt).kind == "text"
    assert score_output("", turn, fmt).kind == "empty"
    broken = score_output('<tool_call>\n{"name":"nope","arguments":{}}\n</tool_call>', turn, fmt)
    assert broken.kind == "invalid" and "unknown tool 'nope'" in (broken.error or "")


def test_reference_outputs_pass_and_broken_ones_fail() -> None:
    turns = select_turns(40)
    perfect = evaluate_tool_calls(lambda m, t, c: reference_output(_turn_for(turns, m), "llama3_json"), turns,
                                  "required", "llama3_json")
    assert perfect.passed and perfect.count("call") == 40 and perfect.name_matches == 40
    half_broken = evaluate_tool_calls(lambda m, t, c: '<tool_call>\n{"name":' if len(m) % 2 else reference_output(_turn_for(turns, m), "hermes"),
                                      turns, "required", "hermes")
    assert not half_broken.passed and half_broken.invalid == sum(len(t.messages) % 2 for t in turns)
    assert half_broken.count("truncated") == half_broken.invalid  # '<tool_call>{"name":' stops mid-call
    assert "invalid calls" in half_broken.table()


def _turn_for(turns, messages):
    return next(t for t in turns if t.messages is messages)


class GrammarWalk:
    """An engine-like callable without a model: grammar-masked random choice over SmolLM2's
    vocabulary (biased toward short and closing tokens so outputs end). Whatever it emits, the
    grammar allowed; so it measures what the grammar guarantees, on the workload's own tools."""

    def __init__(self, compiler, tokenizer, seed: int) -> None:
        self.compiler, self.tok, self.rng = compiler, tokenizer, random.Random(seed)
        self.eos = tokenizer.eos_token_id
        vocab = tokenizer.convert_ids_to_tokens(list(range(VOCAB_SIZE)))
        self.short = np.array([len(t) <= 1 for t in vocab])
        self.closers = [tokenizer.convert_tokens_to_ids(t) for t in ('"', "}", "]", '"}', "}}")]

    def __call__(self, messages, tools, tool_choice):
        specs = parse_tools(tools)
        matcher = self.compiler.matcher(specs, parse_tool_choice(tool_choice, specs), get_format("hermes"))
        bitmask, out = matcher.new_bitmask(1), []
        while not matcher.is_terminated() and len(out) < 400:
            matcher.fill_mask(bitmask, 0)
            row = unpack_bitmask(bitmask, VOCAB_SIZE)[0].numpy()
            closers = [c for c in self.closers if row[c]]
            if row[self.eos] and self.rng.random() < 0.7:
                token = self.eos
            elif closers and self.rng.random() < 0.15:
                token = self.rng.choice(closers)
            else:
                pool = np.flatnonzero(row & self.short) if self.rng.random() < 0.9 else np.flatnonzero(row)
                token = int(self.rng.choice(list(pool) or list(np.flatnonzero(row))))
            assert matcher.accept(token)
            out.append(token)
        if out and out[-1] == self.eos:
            out.pop()
        for i in range(0, len(out), 3):  # stream it back in 3-token deltas, like an engine
            yield self.tok.decode(out[:i + 3]) [len(self.tok.decode(out[:i])):]


def test_grammar_guarantees_valid_calls_on_heldout_turns(compiler, smollm2_tokenizer) -> None:
    turns = select_turns(24, seed=1)
    walk = GrammarWalk(compiler, smollm2_tokenizer, seed=0)
    required = evaluate_tool_calls(walk, turns, "required", "hermes")
    assert required.passed, required.table()
    named = evaluate_tool_calls(walk, turns[:8], {"type": "function", "function": {"name": "end_call"}}, "hermes")
    assert named.passed and {o.names for o in named.outcomes} == {("end_call",)}
    auto = evaluate_tool_calls(walk, turns[:12], "auto", "hermes")
    assert auto.passed and auto.invalid == 0


def test_cli_select_and_score(tmp_path: Path, capsys) -> None:
    turns_path, outputs_path, report_path = tmp_path / "t.jsonl", tmp_path / "o.jsonl", tmp_path / "r.json"
    assert main(["bench", "tool-calls", "select", "--n", "12", "--out", str(turns_path)]) == 0
    records = [json.loads(line) for line in turns_path.read_text().splitlines()]
    turns = select_turns(12)
    with outputs_path.open("w") as out:
        for r, t in zip(records, turns, strict=True):
            out.write(json.dumps({"id": r["id"], "output": reference_output(t, "hermes")}) + "\n")
    assert main(["bench", "tool-calls", "score", "--turns", str(turns_path), "--outputs", str(outputs_path), "--json", str(report_path)]) == 0
    assert json.loads(report_path.read_text())["summary"]["valid_calls"] == 12
    assert "valid call rate" in capsys.readouterr().out
