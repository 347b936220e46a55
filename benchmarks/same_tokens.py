"""The prompts of a load test's turns as turnspec renders them, for a peer on the same tokens.

`turnspec workload render` writes a workload file (JSONL, one conversation a line: `id`,
`tools`, `messages`, `max_tokens`) whose lines also carry `turnspec_tokens`
(loadtest/token_table.py): for every turn, the prompt token ids turnspec's server hands its
engine when the load test sends the turn's whole scripted history (HTTP, gRPC, or WS with
`--resend-history`), made as the server makes them: its message parsing
(server/conversation.py), the model's ChatTemplate with the tools in the system prompt
(engine/chat.py), and the structural tags of the tools for tool_choice auto and required
(what `--tool-choice script` sends) from its grammar compiler. `turnspec loadtest --url
http://HOST:PORT/generate --workload FILE` then gives SGLang's native endpoint exactly those
ids; tests/benchmarks/test_same_tokens.py holds them equal to what the engine receives.

    turnspec workload render --out voice-tokens.jsonl --conversations 40 [--no-tools]
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from turnspec.loadtest.token_table import turn_key
from turnspec.loadtest.workload import Script, merge_spoken_calls, script_from_messages
from turnspec.server.conversation import messages_from_chat
from turnspec.tools_grammar.schema import ToolChoice, parse_tools

TAG_MODES = ("auto", "required")


def conversation_messages(script: Script) -> list[dict[str, Any]]:
    """The whole scripted conversation back from its turns."""
    last = script.turns[-1]
    return list(last.history) + ([last.expected] if last.expected is not None else [])


def render_record(chat: Any, script: Script, *, tools_in_prompt: bool,
                  model: str) -> dict[str, Any]:
    """One workload line with its `turnspec_tokens`. The turns are rebuilt from the line as
    the load test will read it (JSON round trip, spoken calls merged), so their keys match."""
    record = json.loads(json.dumps({
        "id": script.id, "tools": list(script.tools), "messages": conversation_messages(script),
        "max_tokens": script.turns[0].max_tokens}))
    replay = script_from_messages(record["id"], merge_spoken_calls(record["messages"]),
                                  record["tools"], record["max_tokens"])
    specs = parse_tools(record["tools"]) if tools_in_prompt else []
    sent_tools = record["tools"] if tools_in_prompt else []
    turns = {turn_key(sent_tools, t.history): chat.render(messages_from_chat(list(t.history)),
                                                          specs)
             for t in replay.turns}
    tags = {}
    if specs:
        compiler = chat.grammar_compiler
        tags = {mode: compiler.structural_tag(specs, ToolChoice(mode), chat.tool_format)
                .structural_tag for mode in TAG_MODES}
    record["turnspec_tokens"] = {"model": model, "tools_in_prompt": tools_in_prompt,
                                 "tool_format": chat.tool_format.name,
                                 "structural_tags": tags, "turns": turns}
    return record


def render_file(chat: Any, scripts: Iterable[Script], out: str | Path, *, conversations: int,
                tools_in_prompt: bool, model: str) -> tuple[int, int]:
    """Render the first `conversations` scripts into `out`; (conversations, turns) written."""
    n_conv = n_turns = 0
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with Path(out).open("w", encoding="utf-8") as f:
        for script in itertools.islice(scripts, conversations):
            record = render_record(chat, script, tools_in_prompt=tools_in_prompt, model=model)
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
            n_conv += 1
            n_turns += len(record["turnspec_tokens"]["turns"])
    return n_conv, n_turns


def scripts_from(source: str, seed: int, max_tokens: int) -> Iterator[Script]:
    """The load test's own conversations, in its order: `voice` (as `--workload voice` plays
    them) or each line of a workload JSONL file once."""
    from turnspec.loadtest.workload import WorkloadSpec, load_jsonl, voice_scripts

    spec = WorkloadSpec.parse(source, max_tokens)
    if spec.kind == "voice":
        return voice_scripts(seed, max_tokens)
    if spec.kind != "file":
        raise ValueError(f"--workload {source}: expected voice or a workload JSONL file")
    scripts, errors = load_jsonl(source, max_tokens)
    if errors:
        raise ValueError(f"{source}: {len(errors)} unusable line(s), first: {errors[0]}")
    return iter(scripts)
