"""The independent evaluation set's hand-written source -> its JSONL (workload record schema).

The conversations and prompts are written by hand in `speculator/eval/src/` (see
`speculator/eval/README.md`), one line per message, because JSONL with tool schemas repeated on
every line is hard to write or review. This module only transcribes: it attaches each domain's
tools (`src/tools/<domain>.json`), gives tool calls stable ids, writes arguments and results as
compact JSON and checks every call against its tool's schema. It adds no text of its own.

Voice source, `src/voice/<domain>.txt`:

    === <goal>                      a conversation (id indep-<domain>-<goal>)
    system: <text>
    user: <text>
    assistant: <text>
    call: <tool name> <JSON arguments>
    tool: <JSON result>             answers the call right before it

Generic source, `src/generic.txt`: `system: <text>` sets the system prompt of the prompts after
it; `[<kind>] <text>` is one prompt. Lines starting with '#' and blank lines are skipped.

    python -m turnspec.speculator.eval_source      # rewrites speculator/eval/*.jsonl
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from turnspec.tools_grammar.schema import find_tool, parse_tools, validate_arguments
from turnspec.workloads import Conversation, export_jsonl

EVAL_DIR = Path(__file__).parent / "eval"
SRC_DIR = EVAL_DIR / "src"
_GOAL = re.compile(r"^[a-z0-9_]+$")
_KIND = re.compile(r"^\[([a-z_]+)\]\s+(.+)$")


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _call_id(conv_id: str, index: int) -> str:
    return "call_" + hashlib.sha256(f"{conv_id}:{index}".encode()).hexdigest()[:12]


def _lines(path: Path) -> list[tuple[int, str]]:
    return [(n, line.strip()) for n, line in enumerate(path.read_text(encoding="utf-8")
                                                       .splitlines(), 1)
            if line.strip() and not line.lstrip().startswith("#")]


def voice_conversations(src: Path = SRC_DIR) -> list[Conversation]:
    """Every conversation of `src/voice/*.txt`, by domain (file name) and in file order."""
    out: list[Conversation] = []
    for path in sorted((src / "voice").glob("*.txt")):
        domain = path.stem
        tools_json = json.loads((src / "tools" / f"{domain}.json").read_text(encoding="utf-8"))
        tools = parse_tools(tools_json)
        convs: list[tuple[str, list[dict]]] = []
        for n, line in _lines(path):
            where = f"{path.name}:{n}"
            if line.startswith("==="):
                goal = line[3:].strip()
                if not _GOAL.match(goal):
                    raise ValueError(f"{where}: goal {goal!r}: expected lowercase letters, digits "
                                     "and '_'")
                convs.append((goal, []))
                continue
            role, sep, text = line.partition(":")
            text = text.strip()
            if not convs or not sep or not text:
                raise ValueError(f"{where}: expected '=== <goal>' first, then '<role>: <text>'")
            conv_id = f"indep-{domain}-{convs[-1][0]}"
            messages = convs[-1][1]
            if role in ("system", "user", "assistant"):
                messages.append({"role": role, "content": text})
            elif role == "call":
                name, _, args = text.partition(" ")
                tool = find_tool(tools, name)
                if tool is None:
                    raise ValueError(f"{where}: unknown tool {name!r}; expected one of "
                                     f"{[t.name for t in tools]}")
                arguments = json.loads(args)
                validate_arguments(tool, arguments)
                messages.append({"role": "assistant", "content": None, "tool_calls": [{
                    "id": _call_id(conv_id, len(messages)), "type": "function",
                    "function": {"name": name, "arguments": _compact(arguments)}}]})
            elif role == "tool":
                prev = messages[-1] if messages else {}
                if not prev.get("tool_calls"):
                    raise ValueError(f"{where}: a tool result must follow a call")
                messages.append({"role": "tool", "tool_call_id": prev["tool_calls"][0]["id"],
                                 "content": _compact(json.loads(text))})
            else:
                raise ValueError(f"{where}: role {role!r}: expected system, user, assistant, "
                                 "call or tool")
        for goal, messages in convs:
            conv = Conversation(f"indep-{domain}-{goal}", "heldout", domain, f"{domain}.{goal}",
                                tools_json, messages)
            _check_shape(conv)
            out.append(conv)
    ids = [c.id for c in out]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate conversation ids: {sorted({i for i in ids if ids.count(i) > 1})}")
    return out


def _check_shape(conv: Conversation) -> None:
    """One system message first, every call answered, a spoken reply at the end."""
    roles = [m["role"] for m in conv.messages]
    if roles.count("system") != 1:
        raise ValueError(f"{conv.id}: expected exactly one system message, got {roles.count('system')}")
    for i, m in enumerate(conv.messages):
        if m.get("tool_calls") and (i + 1 == len(roles) or roles[i + 1] != "tool"):
            raise ValueError(f"{conv.id}: message {i} calls a tool whose result does not follow")
    last = conv.messages[-1]
    if last["role"] != "assistant" or last.get("tool_calls"):
        raise ValueError(f"{conv.id}: expected the conversation to end with a spoken assistant reply")


def generic_conversations(src: Path = SRC_DIR) -> list[Conversation]:
    """Every prompt of `src/generic.txt`, one user message each, in file order."""
    out: list[Conversation] = []
    system: str | None = None
    path = src / "generic.txt"
    for n, line in _lines(path):
        if line.startswith("system:"):
            system = line.partition(":")[2].strip()
            continue
        m = _KIND.match(line)
        if m is None or system is None:
            raise ValueError(f"{path.name}:{n}: expected 'system: <text>' first, then "
                             "'[<kind>] <prompt>'")
        out.append(Conversation(f"indep-generic-{len(out):03d}", "generic", "generic",
                                f"generic.{m.group(1)}", [],
                                [{"role": "system", "content": system},
                                 {"role": "user", "content": m.group(2)}]))
    return out


def main() -> None:
    for name, convs in (("voice.jsonl", voice_conversations()),
                        ("generic.jsonl", generic_conversations())):
        n = export_jsonl(convs, EVAL_DIR / name)
        print(f"wrote {EVAL_DIR / name}: {n} records")


if __name__ == "__main__":
    main()
