"""Dictation turns: the caller reads out details and asks the agent to read them back.

Callers do this all the time (a new address, a reference number, the names on a booking), and a
capable agent's answer repeats what the caller just said. For a speculative drafter such turns
are copies that cannot be memorised: the details are random per call (names, spelled codes,
digit strings, addresses, dates). A drafter trained on the scripted calls alone was weakest
exactly on copies: on held-out tool turns whose answer is mostly copied from the prompt it
reached τ 2.45 against 4.50 on new text (docs/history/notes/drafter-run6-workload.md).

What SmolLM2-135M actually answers (6 prompts tried on the CPU): rarely the details; more
often it replays an earlier tool call or tool response of the same call verbatim, or
improvises. Those replays are copies too (with per-call values), so the turns still exercise
what the drafter misses, but whether they raise held-out τ is untested: `turnspec speculator
datagen --dictation-frac` (source "dictation", default 0) is there for a GPU run to measure.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from datetime import date, timedelta

from turnspec.workloads import spoken
from turnspec.workloads.conversation import FIRST_DAY, Conversation, sampled
from turnspec.workloads.dialogue import CITIES, FIRST_NAMES, LAST_NAMES, STREETS

ASKS = (
    "can you read that back to me?",
    "could you repeat all of that back so I know you got it?",
    "read it back to me, please.",
    "just to be sure, can you say those back?",
    "can you confirm what I just gave you?",
)
LEADS = (
    "okay, let me give you the details.",
    "I need to update some things on my account.",
    "here's the information you asked for.",
    "alright, write this down.",
    "so, for the record,",
)


def _detail(rng: random.Random, today: date) -> str:
    kind = rng.randrange(6)
    if kind == 0:
        return f"the name is {rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
    if kind == 1:
        return f"the reference is {spoken.spell(spoken.code(rng, rng.randint(5, 8)))}"
    if kind == 2:
        return f"my number is {spoken.digits(rng, 10).spoken}"
    if kind == 3:
        n = rng.randint(10, 9999)
        return (f"the address is {spoken.house_number(n)} {rng.choice(STREETS)}, "
                f"{rng.choice(CITIES)}")
    if kind == 4:
        when = today + timedelta(days=rng.randint(1, 90))
        return f"the date is {spoken.spoken_date(when.isoformat())}"
    return f"the account ends in {spoken.digits(rng, 4).spoken}"


def dictation_conversations(conversations: Iterable[Conversation], fraction: float,
                            seed: int = 0) -> Iterator[Conversation]:
    """For a stable `fraction` of the conversations (chosen by a hash of id and seed): the call
    cut right after one of the agent's spoken replies, plus a caller turn with 2-4 random
    details and a request to read them back. Ends on that user turn (an open prompt); its id
    is `<id>:dictation`. Conversations with no spoken agent reply are skipped."""
    for conv in sampled(conversations, fraction, seed, "dictation"):
        replies = [i for i, m in enumerate(conv.messages) if m["role"] == "assistant" and m.get("content")]
        if not replies:
            continue
        rng = random.Random(f"dictation:{seed}:{conv.id}")
        cut = rng.choice(replies)
        today = FIRST_DAY + timedelta(days=rng.randrange(120))
        details = ", ".join(_detail(rng, today) for _ in range(rng.randint(2, 4)))
        ask = f"{rng.choice(LEADS)} {details}. {rng.choice(ASKS)}"
        yield Conversation(f"{conv.id}:dictation", conv.split, conv.domain, conv.scenario,
                           conv.tools, [*conv.messages[: cut + 1], {"role": "user", "content": ask}])
