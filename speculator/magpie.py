"""Broad prompts written by the target itself (Magpie: Xu et al. 2024, "Alignment Data Synthesis
from Scratch by Prompting Aligned LLMs with Nothing"), for pre-training the drafter on more than
the workload generator's calls (issue 34 item 2).

An instruct model given its chat template up to the start of a user turn
(`<|im_start|>user\\n`) writes a user's message: sampled at temperature ~1, the lines come from
what it has learned users ask, so a few system prompts (speculator/magpie_settings.py) give tens
of thousands of different requests with no dataset to download. A conversation goes on for up
to `max_user_turns` turns: the target answers each user line greedily (what datagen would
answer) and writes the next one.

`turnspec speculator magpie --out DIR` writes the conversations as workload records (domain
"magpie", ending with a user line) into DIR/conversations-000001.jsonl;
`turnspec speculator datagen --from-conversations DIR` then answers every user line's history,
as for recorded traffic, with source "magpie". Lines that are empty, too short or long, carry
chat markup, repeat an earlier line, or equal a line of the independent evaluation set are
dropped and counted (`MagpieStats`).
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from turnspec.speculator.magpie_settings import random_setting
from turnspec.tools_grammar.schema import parse_tools

# (prompts, temperature, top_p, max_new_tokens) -> completion ids per prompt (a stop id may end
# one); temperature 0 is greedy. speculator/datagen_target.py's targets provide it.
SampleFn = Callable[[list[list[int]], float, float, int], list[list[int]]]
SENTINEL = "\u2063MAGPIE\u2063"          # never in a real message; marks where the user line goes
MARKUP = re.compile(r"<\|[a-z_]+\|>|^\s*(user|assistant|system)\s*[:\n]", re.IGNORECASE)


@dataclass(frozen=True)
class MagpieConfig:
    conversations: int
    seed: int = 0
    max_user_turns: int = 2          # user lines per conversation at most
    more_turns_frac: float = 0.3     # share of conversations that go on after each turn
    tools_frac: float | None = None  # share of tool-bearing settings (None: magpie_settings')
    temperature: float = 1.0
    top_p: float = 0.95
    max_user_tokens: int = 96        # a sampled user line longer than this is dropped
    max_answer_tokens: int = 192     # greedy answers that build later turns' history
    min_chars: int = 8
    max_chars: int = 600

    def __post_init__(self) -> None:
        if self.conversations < 1:
            raise ValueError(f"conversations: expected >= 1, got {self.conversations}")
        if self.max_user_turns < 1:
            raise ValueError(f"max_user_turns: expected >= 1, got {self.max_user_turns}")
        for name in ("more_turns_frac", "tools_frac"):
            v = getattr(self, name)
            if v is not None and not 0.0 <= v <= 1.0:
                raise ValueError(f"{name}: expected a share in [0, 1], got {v}")
        if not self.temperature > 0:
            raise ValueError(f"temperature: expected > 0 (the lines are sampled), got "
                             f"{self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p: expected (0, 1], got {self.top_p}")
        if min(self.max_user_tokens, self.max_answer_tokens, self.min_chars) < 1 or \
                self.max_chars < self.min_chars:
            raise ValueError("max_user_tokens, max_answer_tokens, min_chars: expected >= 1, and "
                             f"max_chars >= min_chars; got {self}")


@dataclass
class MagpieStats:
    sampled: int = 0
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)   # reason -> lines
    conversations: int = 0
    turns: Counter = field(default_factory=Counter)     # user lines -> conversations

    def as_dict(self) -> dict[str, Any]:
        return {"sampled": self.sampled, "kept": self.kept, "dropped": dict(self.dropped),
                "conversations": self.conversations,
                "conversations_by_user_turns": {str(k): v for k, v in sorted(self.turns.items())}}


def user_prefix(chat: Any, messages: list[dict], tools: Sequence | None) -> list[int]:
    """The prompt ids of `messages` followed by an open user turn: the chat template rendered up to
    where the user's content would start (`chat` is an engine.chat.ChatTemplate)."""
    text = chat.render_text([*messages, {"role": "user", "content": SENTINEL}], list(tools or []),
                            add_generation_prompt=False)
    if text.count(SENTINEL) != 1:
        raise ValueError("the chat template did not render the user turn's content exactly once; "
                         "expected a template that writes message content verbatim")
    return chat.encode(text[: text.index(SENTINEL)])


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9']+", text.lower()))


class LineFilter:
    """Keeps a sampled user line or names why not; remembers kept lines to drop repeats."""

    def __init__(self, cfg: MagpieConfig, banned: set[str]) -> None:
        self.cfg, self.banned, self.seen = cfg, banned, set()

    def reason(self, text: str, finished: bool) -> str | None:
        if not finished:
            return "too_long_tokens"
        if len(text) < self.cfg.min_chars:
            return "too_short"
        if len(text) > self.cfg.max_chars:
            return "too_long_chars"
        if MARKUP.search(text):
            return "markup"
        key = _norm(text)
        if key in self.banned:
            return "eval_set_line"
        if key in self.seen:
            return "repeat"
        self.seen.add(key)
        return None


def eval_set_lines() -> set[str]:
    """Normalised user lines of the independent evaluation set: never a training prompt."""
    from turnspec.speculator.eval_set import load_eval_set

    return {_norm(m["content"]) for convs in load_eval_set().values() for c in convs
            for m in c.messages if m["role"] == "user" and isinstance(m.get("content"), str)}


def generate(cfg: MagpieConfig, chat: Any, sample: SampleFn, stop_ids: set[int],
             banned: set[str] | None = None) -> tuple[list[dict], MagpieStats]:
    """The conversations (workload records, each ending with a kept user line) and the stats.
    Each round samples one user line for every live conversation in one batch, then answers the
    ones that go on greedily in one batch."""
    rng = random.Random(f"magpie:{cfg.seed}")
    stats, lines = MagpieStats(), LineFilter(cfg, eval_set_lines() if banned is None else banned)
    live: list[dict] = []
    for i in range(cfg.conversations):
        key, system, tools = random_setting(rng, cfg.tools_frac)
        live.append({"id": f"magpie-{cfg.seed}-{i:06d}", "split": "train", "domain": "magpie",
                     "scenario": f"magpie.{key}", "tools": tools,
                     "messages": [{"role": "system", "content": system}]})
    specs = {r["id"]: parse_tools(r["tools"]) for r in live}   # parsed once per conversation

    def text_of(ids: list[int]) -> str:
        return chat.tokenizer.decode([t for t in ids if t not in stop_ids],
                                     skip_special_tokens=True).strip()

    done: list[dict] = []
    for turn in range(1, cfg.max_user_turns + 1):
        prompts = [user_prefix(chat, r["messages"], specs[r["id"]]) for r in live]
        outs = sample(prompts, cfg.temperature, cfg.top_p, cfg.max_user_tokens)
        kept = []
        for rec, ids in zip(live, outs, strict=True):
            stats.sampled += 1
            text = text_of(ids)
            why = lines.reason(text, finished=bool(ids) and ids[-1] in stop_ids)
            if why:
                stats.dropped[why] += 1
                if turn > 1:   # the conversation so far ends with an answer: end it on its line
                    rec["messages"].pop()
                    done.append(rec)
                continue
            stats.kept += 1
            rec["messages"].append({"role": "user", "content": text})
            kept.append(rec)
        # a tool-bearing call may be answered with a tool call, which needs a result before the
        # caller speaks again: those end after their first line
        going: list[dict] = []
        for rec in kept:   # one pass (a membership test per record was quadratic)
            goes = (turn < cfg.max_user_turns and not rec["tools"]
                    and rng.random() < cfg.more_turns_frac)
            (going if goes else done).append(rec)
        if going:
            answers = sample([chat.render(r["messages"]) for r in going],
                             0.0, 1.0, cfg.max_answer_tokens)
            for rec, ids in zip(going, answers, strict=True):
                rec["messages"].append({"role": "assistant", "content": text_of(ids)})
        live = going
    for rec in done:
        stats.conversations += 1
        stats.turns[sum(m["role"] == "user" for m in rec["messages"])] += 1
    done.sort(key=lambda r: r["id"])
    return done, stats


def write(records: list[dict], stats: MagpieStats, cfg: MagpieConfig, out: str | Path) -> Path:
    """DIR/conversations-000001.jsonl (what `datagen --from-conversations` reads) and
    DIR/magpie.json (the config and stats); returns the JSONL's path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "conversations-000001.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    (out / "magpie.json").write_text(json.dumps(
        {"config": dataclasses.asdict(cfg), **stats.as_dict()}, indent=1) + "\n")
    return path
