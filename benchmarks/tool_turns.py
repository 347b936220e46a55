"""Run workload tool turns through the engine core with grammar-constrained tool calls — the
engine side of the tools_grammar validity bench (`turnspec bench tools`) and its CI sample.

Each turn: messages + tools rendered by the model's chat template, a per-request xgrammar
matcher for the tool_choice, greedy decoding (optionally speculative), text collected as the
server would stream it.
"""

from __future__ import annotations

from dataclasses import dataclass

from turnspec.engine.chat import ChatTemplate
from turnspec.engine.local.config import LocalEngineConfig
from turnspec.engine.local.core import EngineCore
from turnspec.engine.protocol import Delta, GenerateRequest, SamplingParams
from turnspec.tools_grammar.schema import parse_tool_choice, parse_tools
from turnspec.workloads import PromptTurn


@dataclass(slots=True)
class TurnResult:
    text: str
    token_ids: list[int]
    final: Delta


def load_core(cfg: LocalEngineConfig) -> tuple[EngineCore, ChatTemplate]:
    """An engine core for `cfg` and its model's chat template (the offline benches' setup)."""
    core = EngineCore(cfg)
    return core, ChatTemplate.from_model_dir(cfg.model_dir, core.tokenizer)


def run_turns(core: EngineCore, chat: ChatTemplate, turns: list[PromptTurn],
              tool_choice: str | dict | None, max_tokens: int = 160,
              spec_block_size: int | None = None,
              sampling: list[SamplingParams] | None = None) -> list[TurnResult]:
    """All turns in flight together (the scheduler batches them); results in turn order.
    Greedy with `max_tokens` unless `sampling` gives each turn its own parameters;
    tool_choice None is "auto" (what a client that sends none gets)."""
    if sampling is not None and len(sampling) != len(turns):
        raise ValueError(f"sampling: expected one SamplingParams per turn ({len(turns)}), "
                         f"got {len(sampling)}")
    ids = []
    for i, turn in enumerate(turns):
        tools = parse_tools(turn.tools)
        choice = parse_tool_choice(tool_choice, tools)
        grammar = chat.grammar_compiler.matcher(tools, choice, chat.tool_format)
        rid = f"turn-{i}-{id(turns)}"
        params = sampling[i] if sampling is not None else SamplingParams(max_tokens=max_tokens)
        core.add(GenerateRequest(rid, chat.render(turn.messages, tools), params,
                                 grammar=grammar, spec_block_size=spec_block_size))
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
