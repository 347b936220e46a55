"""Tool-call validity bench: run held-out workload turns through an engine and count how many
outputs are valid calls (tool_choice "required"/named) or plain text or valid calls ("auto").

Python, with any engine-like callable (messages, tools, tool_choice -> output text, or an
iterable of text deltas, decoded without special tokens):

    turns = select_turns(200, split="heldout", kind="tool_call")
    report = evaluate_tool_calls(generate, turns, tool_choice="required", fmt="hermes")
    print(report.table()); assert report.invalid == 0

CLI, for engines that run elsewhere: write the turns, generate one output per turn, score:

    turnspec bench tool-calls select --n 200 --out turns.jsonl
    (engine writes outputs.jsonl: {"id": <turn id>, "output": <text>} per line)
    turnspec bench tool-calls score --turns turns.jsonl --outputs outputs.jsonl --json report.json
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

from turnspec.tools_grammar.formats import ToolCallFormat, get_format
from turnspec.tools_grammar.parser import (
    TRUNCATED,
    TextDelta,
    ToolCallDone,
    ToolCallInvalid,
    ToolCallStreamParser,
)
from turnspec.tools_grammar.schema import parse_tool_choice, parse_tools
from turnspec.workloads import PromptTurn, generate_conversations, turns_for_prompting

Generate = Callable[[list[dict], list[dict], "str | dict"], "str | Iterable[str]"]


@dataclass(slots=True, frozen=True)
class TurnOutcome:
    turn_id: str
    scenario: str
    kind: str  # "call" (valid calls only), "text" (no call), "invalid" (a broken call), "truncated"
    # (the output stopped inside a call, e.g. at max_tokens), "empty"
    names: tuple[str, ...]
    expected_name: str | None
    error: str | None
    seconds: float


@dataclass(slots=True, frozen=True)
class CallEvalReport:
    tool_choice: str
    format: str
    outcomes: list[TurnOutcome] = field(repr=False)

    @property
    def n(self) -> int:
        return len(self.outcomes)

    def count(self, kind: str) -> int:
        return sum(o.kind == kind for o in self.outcomes)

    @property
    def invalid(self) -> int:
        """Broken calls of any kind, cut off ones included."""
        return self.count("invalid") + self.count("truncated")

    @property
    def passed(self) -> bool:
        """"auto": no broken call; "required" or a named function: every turn is a valid call."""
        if self.tool_choice == "auto":
            return self.invalid == 0
        return self.n > 0 and self.count("call") == self.n

    @property
    def name_matches(self) -> int:
        return sum(o.expected_name is not None and o.names[:1] == (o.expected_name,) for o in self.outcomes)

    def summary(self) -> dict:
        seconds = [o.seconds for o in self.outcomes]
        return {
            "tool_choice": self.tool_choice, "format": self.format, "n": self.n,
            "valid_calls": self.count("call"), "text_only": self.count("text"), "empty": self.count("empty"),
            "invalid_calls": self.invalid, "truncated_calls": self.count("truncated"), "valid_call_rate": self.count("call") / self.n if self.n else 0.0,
            "name_matches_expected": self.name_matches, "passed": self.passed, "mean_seconds": sum(seconds) / len(seconds) if seconds else 0.0,
        }

    def table(self) -> str:
        s = self.summary()
        rows = [("turns", s["n"]), ("valid calls", s["valid_calls"]), ("text only", s["text_only"]),
                ("empty", s["empty"]), ("invalid calls", s["invalid_calls"]), ("  cut off", s["truncated_calls"]),
                ("valid call rate", f"{s['valid_call_rate']:.1%}"), ("name = expected", s["name_matches_expected"]),
                ("mean s / turn", f"{s['mean_seconds']:.3f}")]
        head = f"tool_choice={self.tool_choice} format={self.format}"
        return "\n".join([head, *(f"  {k:<16} {v:>8}" for k, v in rows)])

    def to_json(self) -> dict:
        return {"summary": self.summary(), "outcomes": [asdict(o) for o in self.outcomes]}


def turn_id(turn: PromptTurn) -> str:
    return f"{turn.conversation_id}#{turn.turn}"


def select_turns(n: int, seed: int = 0, split: str = "heldout", kind: str | None = "tool_call") -> list[PromptTurn]:
    """The first n prompting turns of `kind` ("tool_call", "text", or None for any) from the
    workload's `split` conversations, deterministic in (seed, split)."""
    turns: list[PromptTurn] = []
    batch = max(64, n)
    start = 0
    while len(turns) < n:
        convs = generate_conversations(start + batch, seed=seed, split=split)[start:]  # type: ignore[arg-type]
        turns += [t for t in turns_for_prompting(convs) if kind is None or t.kind == kind]
        start += batch
    return turns[:n]


def score_output(output: str | Iterable[str], turn: PromptTurn, fmt: ToolCallFormat | str, seconds: float = 0.0) -> TurnOutcome:
    """Parse one output the way the server would (streaming) and classify it."""
    tools = parse_tools(turn.tools)
    parser = ToolCallStreamParser(fmt, tools)
    events = []
    for delta in [output] if isinstance(output, str) else output:
        events += parser.feed(delta)
    events += parser.finish()
    done = [e for e in events if isinstance(e, ToolCallDone)]
    bad = [e for e in events if isinstance(e, ToolCallInvalid)]
    text = "".join(e.text for e in events if isinstance(e, TextDelta)).strip()
    kind = "invalid" if bad else "call" if done else "text" if text else "empty"
    if bad and bad[0].error == TRUNCATED:
        kind = "truncated"
    expected = None
    if turn.expected and turn.expected.get("tool_calls"):
        expected = turn.expected["tool_calls"][0]["function"]["name"]
    return TurnOutcome(turn_id(turn), turn.scenario, kind, tuple(e.name for e in done), expected,
                       bad[0].error if bad else None, seconds)


def evaluate_tool_calls(generate: Generate, turns: list[PromptTurn], tool_choice: str | dict = "required",
                        fmt: ToolCallFormat | str = "hermes") -> CallEvalReport:
    """Run every turn through `generate(messages, tools, tool_choice)` and score the outputs.
    For tool_choice "required" (or a named function) a turn passes when its kind is "call"."""
    fmt_obj = get_format(fmt) if isinstance(fmt, str) else fmt
    outcomes = []
    for turn in turns:
        parse_tool_choice(tool_choice, parse_tools(turn.tools))  # a bad choice fails before any generation
        start = time.perf_counter()
        output = generate(turn.messages, turn.tools, tool_choice)
        if not isinstance(output, str):
            output = list(output)  # drain the stream inside the timed region
        outcomes.append(score_output(output, turn, fmt_obj, time.perf_counter() - start))
    label = tool_choice if isinstance(tool_choice, str) else json.dumps(tool_choice)
    return CallEvalReport(label, fmt_obj.name, outcomes)


def reference_output(turn: PromptTurn, fmt: ToolCallFormat | str) -> str:
    """The workload's own expected assistant message, rendered in `fmt`: what a perfect model
    would emit (an upper bound for the bench, and a check of the harness itself)."""
    fmt_obj = get_format(fmt) if isinstance(fmt, str) else fmt
    if turn.expected is None:
        return ""
    calls = turn.expected.get("tool_calls") or []
    if not calls:
        return turn.expected.get("content") or ""
    return "\n".join(fmt_obj.render_call_json(c["function"]["name"], c["function"]["arguments"]) for c in calls)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("tool-calls", help="score tool-call validity of outputs "
                                   "an engine elsewhere wrote for held-out turns (select, score)")
    sub = parser.add_subparsers(dest="tool_calls_command", required=True)
    select = sub.add_parser("select", help="write held-out turns as JSONL prompts for an engine")
    select.add_argument("--n", type=int, default=200)
    select.add_argument("--seed", type=int, default=0)
    select.add_argument("--split", choices=("train", "heldout", "all"), default="heldout")
    select.add_argument("--kind", choices=("tool_call", "text", "any"), default="tool_call")
    select.add_argument("--out", required=True)
    score = sub.add_parser("score", help="score an engine's outputs for turns written by select")
    score.add_argument("--turns", required=True)
    score.add_argument("--outputs", required=True, help='JSONL of {"id": <turn id>, "output": <text>}')
    score.add_argument("--tool-choice", default="required")
    score.add_argument("--format", default="hermes")
    score.add_argument("--json", default=None, help="write the report here")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.tool_calls_command == "select":
        turns = select_turns(args.n, args.seed, args.split, None if args.kind == "any" else args.kind)
        with open(args.out, "w", encoding="utf-8") as out:
            for t in turns:
                out.write(json.dumps({"id": turn_id(t), "conversation_id": t.conversation_id, "turn": t.turn,
                                      "scenario": t.scenario, "messages": t.messages, "tools": t.tools,
                                      "expected": t.expected}, ensure_ascii=False) + "\n")
        print(f"wrote {len(turns)} turns to {args.out}")
        return 0
    turns = {}
    with open(args.turns, encoding="utf-8") as src:
        for line in src:
            r = json.loads(line)
            turns[r["id"]] = PromptTurn(r["conversation_id"], r["turn"], "", "", r["scenario"], r["messages"], r["tools"], r["expected"])
    with open(args.outputs, encoding="utf-8") as src:
        outputs = {r["id"]: r["output"] for r in map(json.loads, src)}
    missing = sorted(set(turns) - set(outputs))
    if missing:
        raise ValueError(f"{len(missing)} turns have no output, e.g. {missing[0]!r}")
    report = CallEvalReport(args.tool_choice, args.format, [score_output(outputs[i], t, args.format) for i, t in turns.items()])
    print(report.table())
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(report.to_json(), out, indent=1)
    return 0 if report.passed else 1

