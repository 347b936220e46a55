"""Readback turns: the caller asks the agent to say an earlier reply again.

Voice calls do this constantly (a line drops a word, a caller writes a date down), and the
agent's answer repeats names, dates, amounts and ids already in the context. That makes these
turns the workload's in-context copying cases, which a speculative drafter has to predict from
the context rather than from phrasings it memorised: `turnspec speculator datagen
--readback-frac` adds them to the drafter's training data and, for held-out scenarios, a
`readback-heldout` split that measures exactly that skill.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from turnspec.workloads.conversation import Conversation, sampled, stable_unit

ASKS = (
    "sorry, can you say that again?",
    "wait, what was that?",
    "can you repeat that, please?",
    "sorry, I didn't catch that. one more time?",
    "could you read that back to me?",
    "hold on, say that again slowly, I'm writing it down",
    "what was that again? you cut out",
    "can you repeat the details?",
)

# Exchanges that put distance between the reply and the ask: (caller, agent) pairs.
HOLDS = (
    ("hang on, let me grab a pen", "Sure, take your time."),
    ("one second, my kid is asking me something", "No problem, I'll wait."),
    ("okay hold on, I'm pulling over", "Of course, go ahead."),
    ("wait, let me find some paper", "Sure thing, I'm here."),
    ("sorry, someone's at the door, give me a moment", "No rush."),
)
RETURNS = (
    "okay, I'm back. what were those details again?",
    "alright, ready. can you repeat what you told me?",
    "got it, go ahead. say the details again?",
    "okay sorry about that. what did you say before?",
    "I'm ready now, can you read that back?",
)


def readback_conversations(conversations: Iterable[Conversation], fraction: float,
                           seed: int = 0) -> Iterator[Conversation]:
    """For a stable `fraction` of the conversations (chosen by a hash of id and seed): the call cut
    right after one of the agent's spoken replies to a tool result, for half of them one or two
    hold exchanges (`HOLDS`), then a caller turn asking to hear it again (`ASKS`, or `RETURNS`
    after a hold). The result ends on that user turn (an open prompt); its id is
    `<id>:readback`. Conversations with no such reply are skipped."""
    for conv in sampled(conversations, fraction, seed, "readback"):
        replies = [i for i, m in enumerate(conv.messages)
                   if i > 0 and m["role"] == "assistant" and m.get("content")
                   and conv.messages[i - 1]["role"] == "tool"]
        if not replies:
            continue
        cut = replies[int(stable_unit(f"readback-at:{seed}:{conv.id}") * len(replies))]
        holds = int(stable_unit(f"readback-holds:{seed}:{conv.id}") * 4) - 1   # -1, 0: none; 1 or 2
        tail: list[dict] = []
        for h in range(max(holds, 0)):
            caller, agent = HOLDS[int(stable_unit(f"readback-hold:{seed}:{conv.id}:{h}") * len(HOLDS))]
            tail += [{"role": "user", "content": caller}, {"role": "assistant", "content": agent}]
        asks = RETURNS if tail else ASKS
        ask = asks[int(stable_unit(f"readback-ask:{seed}:{conv.id}") * len(asks))]
        yield Conversation(f"{conv.id}:readback", conv.split, conv.domain, conv.scenario,
                           conv.tools, [*conv.messages[: cut + 1], *tail, {"role": "user", "content": ask}])
