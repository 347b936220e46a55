"""Run workload tool turns through the engine core with grammar-constrained tool calls — the
engine side of the tools_grammar validity bench (`turnspec bench tools`) and its CI sample.

Each turn: messages + tools rendered by the model's chat template, a per-request xgrammar
matcher for the tool_choice, greedy decoding (optionally speculative), text collected as the
server would stream it.
"""

from __future__ import annotations

from dataclasses import dataclass

from turnspec.engine.chat import ChatTemplate
from turnspec.engine.local.core import EngineCore
from turnspec.engine.protocol import Delta, GenerateRequest, SamplingParams
from turnspec.tools_grammar.schema import parse_tool_choice, parse_tools
from turnspec.workloads import PromptTurn


@dataclass(slots=True)
class TurnResult:
    text: str
    token_ids: list[int]
    final: Delta


def run_turns(core: EngineCore, chat: ChatTemplate, turns: list[PromptTurn],
              tool_choice: str | dict, max_tokens: int = 160,
              spec_block_size: int | None = None) -> list[TurnResult]:
    """All turns in flight together (the scheduler batches them); results in turn order."""
    ids = []
    for i, turn in enumerate(turns):
        tools = parse_tools(turn.tools)
        choice = parse_tool_choice(tool_choice, tools)
        grammar = chat.grammar_compiler.matcher(tools, choice, chat.tool_format)
        rid = f"turn-{i}-{id(turns)}"
        core.add(GenerateRequest(rid, chat.render(turn.messages, tools),
                                 SamplingParams(max_tokens=max_tokens), grammar=grammar,
                                 spec_block_size=spec_block_size))
        ids.append(rid)
    text: dict[str, list[str]] = {r: [] for r in ids}
    toks: dict[str, list[int]] = {r: [] for r in ids}
    finals: dict[str, Delta] = {}
    while core.has_work():
        for d in core.step():
            text[d.request_id].append(d.text)
            toks[d.request_id].extend(d.token_ids)
            if d.finished:
                finals[d.request_id] = d
    return [TurnResult("".join(text[r]), toks[r], finals[r]) for r in ids]
