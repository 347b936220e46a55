"""Conversations from scenarios: the records, the seeded generator, prompting turns, JSONL I/O."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Literal

from turnspec.workloads import catalog, domains
from turnspec.workloads.dialogue import Dialogue
from turnspec.workloads.spoken import long_date

Split = Literal["train", "heldout", "all"]
SPLITS = ("train", "heldout", "generic")
FIRST_DAY = date(2026, 11, 30)  # conversations happen on one of the 120 days from here
AGENTS = ("Ava", "Sam", "Maya", "Leo", "Nora", "Eli")


@dataclass(slots=True, frozen=True)
class Conversation:
    """One call: OpenAI chat messages plus the tools offered (Chat Completions format)."""

    id: str
    split: str  # "train" | "heldout" | "generic"
    domain: str
    scenario: str
    tools: list[dict]
    messages: list[dict]

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise ValueError(f"conversation {self.id}: split must be one of {SPLITS}, got {self.split!r}")
        if not self.messages or self.messages[0].get("role") != "system":
            raise ValueError(f"conversation {self.id}: expected messages starting with a system message")

    def to_record(self) -> dict:
        return {"id": self.id, "split": self.split, "domain": self.domain, "scenario": self.scenario,
                "tools": self.tools, "messages": self.messages}

    @classmethod
    def from_record(cls, record: dict) -> Conversation:
        missing = {"id", "split", "domain", "scenario", "tools", "messages"} - record.keys()
        if missing:
            raise ValueError(f"workload record {record.get('id', '?')}: missing fields {sorted(missing)}")
        return cls(record["id"], record["split"], record["domain"], record["scenario"], record["tools"], record["messages"])


@dataclass(slots=True, frozen=True)
class PromptTurn:
    """One prompt: the conversation so far, and what the assistant should say next (None for
    open prompts, e.g. generic chat, where no reference answer exists)."""

    conversation_id: str
    turn: int  # index of the expected message in the conversation
    split: str
    domain: str
    scenario: str
    messages: list[dict]
    tools: list[dict]
    expected: dict | None

    @property
    def kind(self) -> str:
        """"tool_call", "text" or "open"."""
        if self.expected is None:
            return "open"
        return "tool_call" if self.expected.get("tool_calls") else "text"


def stable_unit(key: str) -> float:
    """A stable value in [0, 1) per key (no dependence on PYTHONHASHSEED): seeded selections
    that must come out the same in every process (held-out generic prompts, readback turns)."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2.0**64


def sampled(conversations: Iterable[Conversation], fraction: float, seed: int,
            tag: str) -> Iterator[Conversation]:
    """The stable `fraction` of the conversations chosen by stable_unit(f"{tag}:{seed}:{id}"):
    which calls also give a readback or a dictation prompt, the same in every process."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"{tag} fraction: expected 0..1, got {fraction}")
    for conv in conversations:
        if fraction > 0.0 and stable_unit(f"{tag}:{seed}:{conv.id}") < fraction:
            yield conv


def scenarios_for(split: Split, workload: int = catalog.LATEST_WORKLOAD) -> list[catalog.Scenario]:
    """The scenarios a split draws from in that workload version, sorted by name: the pool's order
    (which `rng.choice` picks from) depends on the names alone, not on the order the domain
    modules register in, so conversation i stays the same when scenarios move between modules."""
    domains.load_all()
    if split not in ("train", "heldout", "all"):
        raise ValueError(f"split: expected train, heldout or all, got {split!r}")
    if workload not in catalog.WORKLOADS:
        raise ValueError(f"workload: expected a version in {catalog.WORKLOADS}, got {workload!r}")
    chosen = [s for s in catalog.SCENARIOS.values()
              if (split == "all" or s.heldout == (split == "heldout")) and s.since <= workload]
    return sorted(chosen, key=lambda s: s.name)


def generate_conversations(n: int, seed: int = 0, split: Split = "all",
                           workload: int = catalog.LATEST_WORKLOAD,
                           indices: Sequence[int] | None = None) -> list[Conversation]:
    """n conversations, deterministic in (n's prefix, seed, split, workload): conversation i
    depends only on (seed, split, workload, i), so a larger n extends a smaller one. The
    held-out conversations are the same in every workload version.
    indices: build only those of the n (in the order given), e.g. one datagen shard's; their ids
    are `conversation_id_of(seed, split, i)`."""
    pool = scenarios_for(split, workload)
    return [_conversation(i, seed, split, pool) for i in checked_indices(n, indices)]


def checked_indices(n: int, indices: Sequence[int] | None) -> Sequence[int]:
    """The indices of a set of `n` conversations to build (all of them when None)."""
    if n < 0:
        raise ValueError(f"n: expected >= 0, got {n}")
    if indices is None:
        return range(n)
    bad = [i for i in indices if not 0 <= i < n]
    if bad:
        raise ValueError(f"indices: expected values in [0, {n}), got {bad[:3]}")
    return indices


def conversation_id_of(seed: int, split: str, index: int) -> str:
    """The id of scenario conversation `index` (what its prompts' ids start with)."""
    return f"{split}-{seed}-{index:06d}"


def _conversation(index: int, seed: int, split: str, pool: list[catalog.Scenario]) -> Conversation:
    rng = random.Random(f"turnspec-workload:{seed}:{split}:{index}")
    sc = rng.choice(pool)
    dom = sc.domain
    today = FIRST_DAY + timedelta(days=rng.randrange(120))
    d = Dialogue(rng, dom, today, rng.choice(dom.businesses), rng.choice(AGENTS))
    d.messages.append({"role": "system", "content": system_prompt(d.agent, d.business, dom.role, today)})
    if rng.random() < 0.4:
        d.say(f"Thanks for calling {d.business}, this is {d.agent}. How can I help?",
              f"Hi, you've reached {d.business}. What can I do for you today?")
    sc.script(d)
    close_call(d)
    return Conversation(conversation_id_of(seed, split, index), "heldout" if sc.heldout else "train", dom.name, sc.name,
                        dom.all_tools, d.messages)


def system_prompt(agent: str, business: str, role: str, today: date) -> str:
    return (f"You are {agent}, the voice assistant for {business}, answering calls for {role}. "
            f"Today is {long_date(today)}. Your replies are spoken aloud: keep them short and natural, "
            "with no lists or formatting. Use the tools to look things up or make changes; never invent "
            "account details.")


def close_call(d: Dialogue) -> None:
    """Most calls end with a goodbye (sometimes through end_call), a few with a transfer."""
    roll = d.rng.random()
    if roll < 0.3:
        d.user("great, that's all I needed. bye!", "perfect, thanks so much", "okay, thank you, that's it", filler=0.2)
        d.call("end_call", {"reason": "resolved"}, {"status": "ending"})
        d.say(f"Thanks for calling {d.business}. Goodbye!", "You're welcome. Have a great day!")
    elif roll < 0.5:
        d.user("thanks, that's everything", "awesome, thank you", filler=0.2)
        d.say("You're welcome! Anything else I can help with?", f"Glad I could help. Thanks for calling {d.business}!")
    elif roll < 0.58:
        department = d.pick("billing", "support", "general")
        d.user(f"actually, can I talk to a real person about my {department if department != 'general' else 'account'}?",
               "is there a human I can speak to?")
        d.call("transfer_to_human", {"reason": "caller asked for a person", "department": department}, {"status": "transferring", "wait_minutes": 2})
        d.say("Sure, I'm transferring you now. The wait is about two minutes.")


def turns_for_prompting(conversations: Iterable[Conversation]) -> Iterator[PromptTurn]:
    """One prompt per assistant message (the messages before it, and the message itself as the
    expected output); conversations that end on a user message also yield one open prompt."""
    for conv in conversations:
        for i, message in enumerate(conv.messages):
            if message["role"] == "assistant":
                yield PromptTurn(conv.id, i, conv.split, conv.domain, conv.scenario, conv.messages[:i], conv.tools, message)
        if conv.messages[-1]["role"] == "user":
            n = len(conv.messages)
            yield PromptTurn(conv.id, n, conv.split, conv.domain, conv.scenario, conv.messages, conv.tools, None)


def export_jsonl(conversations: Iterable[Conversation], path: str | Path) -> int:
    """Write one JSON record per line; returns how many were written."""
    count = 0
    with open(path, "w", encoding="utf-8") as out:
        for conv in conversations:
            out.write(json.dumps(conv.to_record(), ensure_ascii=False, separators=(",", ":")) + "\n")
            count += 1
    return count


def load_jsonl(path: str | Path) -> list[Conversation]:
    with open(path, encoding="utf-8") as src:
        return [Conversation.from_record(json.loads(line)) for line in src if line.strip()]
