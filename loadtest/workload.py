"""What the load test sends: seeded streams of scripted conversations.

A `Script` is one conversation: OpenAI chat messages plus tools. Every assistant message in it
is one turn (the model generates at that point; the scripted message is what the workload
expected); a conversation that ends on a user or tool message adds one open turn. Sources:

- `voice`: `turnspec.workloads.generate_conversations` (seeded phone calls with tool calls and
  tool results), conversation i of the seed, endlessly;
- a JSONL file of conversations (docs/loadtest.md: `{"id"?, "tools"?, "messages",
  "max_tokens"?}` per line, the workloads' record schema is a valid file), cycled;
- `synthetic:IN,OUT`: single-turn prompts of IN tokens (the --tokenizer's count, before the
  chat template) with max_tokens OUT.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from turnspec.workloads import generate_conversations

_ROLES = ("system", "user", "assistant", "tool")


@dataclass(slots=True, frozen=True)
class ScriptTurn:
    """One turn: `history` is the scripted conversation before it (what HTTP/gRPC send),
    `new` the scripted messages since the previous turn (what a WS continuation sends),
    `expected` the scripted assistant message (None for an open turn)."""

    index: int
    history: tuple[dict[str, Any], ...]
    new: tuple[dict[str, Any], ...]
    expected: dict[str, Any] | None
    max_tokens: int

    @property
    def kind(self) -> str:
        if self.expected is None:
            return "open"
        return "tool_call" if self.expected.get("tool_calls") else "text"


@dataclass(slots=True, frozen=True)
class Script:
    id: str
    tools: tuple[dict[str, Any], ...]
    turns: tuple[ScriptTurn, ...]


@dataclass(slots=True, frozen=True)
class WorkloadSpec:
    """`--workload`: "voice", "synthetic:IN,OUT" or a JSONL path; parsed once at the edge."""

    kind: str  # "voice" | "file" | "synthetic"
    path: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    max_tokens: int = 96  # voice / file turns without their own max_tokens

    def __post_init__(self) -> None:
        if self.kind not in ("voice", "file", "synthetic"):
            raise ValueError(f"workload kind: expected voice, file or synthetic, got {self.kind!r}")
        if self.kind == "file" and not self.path:
            raise ValueError("workload file: expected a path")
        if self.kind == "synthetic" and (self.input_tokens < 1 or self.output_tokens < 1):
            raise ValueError(f"synthetic:IN,OUT: expected IN >= 1 and OUT >= 1, got "
                             f"{self.input_tokens},{self.output_tokens}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens: expected >= 1, got {self.max_tokens}")

    @classmethod
    def parse(cls, text: str, max_tokens: int = 96) -> WorkloadSpec:
        if text == "voice":
            return cls("voice", max_tokens=max_tokens)
        if text.startswith("synthetic:"):
            try:
                n_in, n_out = (int(x) for x in text.split(":", 1)[1].split(","))
            except ValueError:
                raise ValueError(f"--workload {text!r}: expected synthetic:IN,OUT with two "
                                 "integers, e.g. synthetic:128,64") from None
            return cls("synthetic", input_tokens=n_in, output_tokens=n_out, max_tokens=n_out)
        return cls("file", path=text, max_tokens=max_tokens)

    @property
    def label(self) -> str:
        if self.kind == "synthetic":
            return f"synthetic:{self.input_tokens},{self.output_tokens}"
        return self.path if self.kind == "file" else "voice"


def script_from_messages(conv_id: str, messages: list[dict[str, Any]],
                         tools: list[dict[str, Any]], max_tokens: int) -> Script:
    turns = []
    last = 0  # first message after the previous turn's assistant message
    for i, m in enumerate(messages):
        if m["role"] == "assistant":
            turns.append(ScriptTurn(i, tuple(messages[:i]), tuple(messages[last:i]), m,
                                    max_tokens))
            last = i + 1
    if messages[-1]["role"] in ("user", "tool"):
        turns.append(ScriptTurn(len(messages), tuple(messages), tuple(messages[last:]), None,
                                max_tokens))
    return Script(conv_id, tuple(tools), tuple(turns))


def voice_scripts(seed: int, max_tokens: int) -> Iterator[Script]:
    for i in itertools.count():
        conv = generate_conversations(i + 1, seed, "all", indices=[i])[0]
        yield script_from_messages(conv.id, conv.messages, conv.tools, max_tokens)


# -- JSONL files -------------------------------------------------------------------------------

def check_record(record: Any) -> str | None:
    """What is wrong with one JSONL conversation record, or None when it is usable."""
    if not isinstance(record, dict):
        return f"expected a JSON object, got {type(record).__name__}"
    messages, tools = record.get("messages"), record.get("tools", [])
    if not isinstance(messages, list) or not messages:
        return "messages: expected a non-empty array of chat messages"
    if not isinstance(tools, list) or any(
            not isinstance(t, dict) or not isinstance((t.get("function") or t).get("name"), str)
            for t in tools):
        return "tools: expected an array of {type: 'function', function: {name, ...}}"
    mt = record.get("max_tokens")
    if mt is not None and (not isinstance(mt, int) or mt < 1):
        return f"max_tokens: expected a positive integer, got {mt!r}"
    prev = None
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(m, dict) or m.get("role") not in _ROLES:
            got = m.get("role") if isinstance(m, dict) else type(m).__name__
            return f"{where}.role: expected one of {', '.join(_ROLES)}, got {got!r}"
        calls = m.get("tool_calls")
        if not isinstance(m.get("content"), str) and not (m["role"] == "assistant" and calls):
            return f"{where}.content: expected a string"
        if calls is not None and (not isinstance(calls, list) or any(
                not isinstance(c, dict) or not isinstance(c.get("function"), dict)
                or not isinstance(c["function"].get("arguments", ""), str) for c in calls)):
            return f"{where}.tool_calls: expected [{{id, type, function: {{name, arguments}}}}]"
        if m["role"] == "tool" and (prev not in ("tool_call", "tool")
                                    or not isinstance(m.get("tool_call_id"), str)):
            return f"{where}: a tool message needs a tool_call_id and must follow a tool call"
        if m["role"] == "assistant" and prev not in ("system", "user", "tool"):
            return (f"{where}: an assistant message (a turn) must follow a system, user or tool "
                    "message")
        prev = "tool_call" if calls else m["role"]
    return None


def merge_spoken_calls(messages: list[Any]) -> list[Any]:
    """An assistant message of text alone followed by one of tool calls alone ("one moment,
    let me check", then the call) as one assistant turn: the text, then the calls, the way
    Responses input items and a model's own reply hold them. Anything else is left as it is
    (check_record judges it)."""
    out: list[Any] = []
    for m in messages:
        prev = out[-1] if out else None
        if (isinstance(m, dict) and isinstance(prev, dict) and m.get("role") == "assistant"
                and prev.get("role") == "assistant" and not prev.get("tool_calls")
                and m.get("tool_calls") and not m.get("content")):
            out[-1] = {**prev, "tool_calls": m["tool_calls"]}
        else:
            out.append(m)
    return out


def load_jsonl(path: str | Path, max_tokens: int) -> tuple[list[Script], list[str]]:
    """(usable conversations, one message per unusable line naming the file, line and field)."""
    scripts, errors = [], []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        return [], [f"{path}: cannot read the workload file: {e}"]
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as e:
            errors.append(f"{path}:{n}: not JSON ({e})")
            continue
        if isinstance(record, dict) and isinstance(record.get("messages"), list):
            record["messages"] = merge_spoken_calls(record["messages"])
        problem = check_record(record)
        if problem is None:
            conv_id = str(record.get("id") or f"line-{n}")
            script = script_from_messages(conv_id, record["messages"], record.get("tools") or [],
                                          record.get("max_tokens") or max_tokens)
            scripts.append(script)
        else:
            errors.append(f"{path}:{n}: {problem}")
    if not scripts and not errors:
        errors.append(f"{path}: no conversations (the file is empty)")
    return scripts, errors


def cycled(scripts: list[Script]) -> Iterator[Script]:
    """The file's conversations in order, again and again (ids get #2, #3, ... on repeats)."""
    for lap in itertools.count(1):
        for s in scripts:
            yield s if lap == 1 else Script(f"{s.id}#{lap}", s.tools, s.turns)


# -- synthetic prompts ---------------------------------------------------------------------------

_WORD_TEXT = ("the quick table river morning signal paper window garden number yellow station "
          "market simple history answer travel winter cotton engine silver letter mountain "
          "system kitchen office planet rhythm bottle forest bridge camera doctor finger "
          "island jacket ladder meadow orange pencil rocket saddle ticket velvet wagon "
          "anchor blanket candle desert feather harbor lantern marble needle pepper")


def synthetic_scripts(tokenizer: Any, input_tokens: int, output_tokens: int,
                      seed: int) -> Iterator[Script]:
    """Single-turn prompts of `input_tokens` tokens (cut from seeded random words and decoded;
    re-tokenizing may differ by a token at the cut), each different from its first words on,
    so a prefix cache shares nothing but the chat template's own prefix."""
    words_pool = _WORD_TEXT.split()
    for i in itertools.count():
        rng = random.Random(f"turnspec-loadtest-synthetic:{seed}:{i}")
        words = [rng.choice(words_pool) for _ in range(input_tokens + 8)]
        ids = tokenizer.encode(" ".join(words), add_special_tokens=False)[:input_tokens]
        text = tokenizer.decode(ids)
        yield script_from_messages(f"synthetic-{seed}-{i:06d}",
                                   [{"role": "user", "content": text}], [], output_tokens)


def load_tokenizer(folder: str) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder)


def open_source(spec: WorkloadSpec, seed: int, tokenizer: Any = None
                ) -> tuple[Iterator[Script], list[str]]:
    """(an endless stream of conversations, workload errors). Raises `WorkloadError` when
    nothing usable is left (every line of a file is malformed)."""
    if spec.kind == "voice":
        return voice_scripts(seed, spec.max_tokens), []
    if spec.kind == "synthetic":
        if tokenizer is None:
            raise ValueError("synthetic workloads need a tokenizer (--tokenizer FOLDER)")
        return synthetic_scripts(tokenizer, spec.input_tokens, spec.output_tokens, seed), []
    assert spec.path is not None
    scripts, errors = load_jsonl(spec.path, spec.max_tokens)
    if not scripts:
        raise WorkloadError(errors)
    return cycled(scripts), errors


class WorkloadError(ValueError):
    """No usable conversation; `errors` says why, line by line."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors[:3]) + (f" (+{len(errors) - 3} more)"
                                                  if len(errors) > 3 else ""))
        self.errors = errors
