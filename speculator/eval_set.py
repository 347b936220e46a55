"""The independent evaluation set (`speculator/eval/`): hand-written voice-agent calls and generic
chat prompts that share nothing with the workload generator, so their held-out τ says how a
drafter does on turns it could not have memorised the shape of (`speculator/eval/README.md`).

It is never trained on: its prompts become samples of split "heldout" only, under the sources
below, which `train_io.eval_splits` names by the source alone; tests/speculator/test_eval_set.py
fails if one of its user lines appears in the training data.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from turnspec.speculator.datagen import PromptItem
from turnspec.speculator.prompts import RenderFn, render_items
from turnspec.workloads import Conversation, load_jsonl, turns_for_prompting

EVAL_DIR = Path(__file__).parent / "eval"
# sample source -> the file its prompts come from
SOURCES = {"independent-voice": EVAL_DIR / "voice.jsonl",
           "independent-generic": EVAL_DIR / "generic.jsonl"}


def load_eval_set() -> dict[str, list[Conversation]]:
    """The set's conversations per source."""
    return {source: load_jsonl(path) for source, path in SOURCES.items()}


def eval_prompt_items(render: RenderFn, max_prompt_tokens: int = 2048,
                      ) -> tuple[list[PromptItem], int]:
    """One held-out prompt per assistant message of the voice calls (the call so far, its tools
    offered; the scripted reply only builds later turns' history) and per generic prompt, ids
    "<conversation>:<turn>"; and the number skipped for exceeding max_prompt_tokens."""
    candidates = [(f"{t.conversation_id}:{t.turn}", "heldout", source, t.messages, t.tools)
                  for source, convs in load_eval_set().items()
                  for t in turns_for_prompting(convs)]
    return render_items(render, candidates, max_prompt_tokens)


def counts(sets: dict[str, list[Conversation]] | None = None) -> dict:
    """What the set holds: scored voice turns per domain (assistant messages), conversations,
    domains and generic prompts per kind."""
    sets = load_eval_set() if sets is None else sets
    voice = sets["independent-voice"]
    turns = Counter(c.domain for c in voice for m in c.messages if m["role"] == "assistant")
    calls = sum(1 for c in voice for m in c.messages if m.get("tool_calls"))
    kinds = Counter(c.scenario.split(".", 1)[1] for c in sets["independent-generic"])
    return {"voice_turns": sum(turns.values()), "tool_call_turns": calls,
            "voice_conversations": len(voice), "turns_per_domain": dict(sorted(turns.items())),
            "generic_prompts": sum(kinds.values()), "generic_kinds": dict(sorted(kinds.items()))}
