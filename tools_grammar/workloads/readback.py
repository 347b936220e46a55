"""Readback turns: the caller asks the agent to say its last reply again.

Voice calls do this constantly (a line drops a word, a caller writes a date down), and the
agent's answer repeats names, dates, amounts and ids already in the context. That makes these
turns the workload's in-context copying cases, which a speculative drafter has to predict from
the context rather than from phrasings it memorised: `turnspec speculator datagen
--readback-frac` adds them to the drafter's training data and, for held-out scenarios, a
`readback-heldout` split that measures exactly that skill.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from turnspec.tools_grammar.workloads.conversation import Conversation, stable_unit

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


def readback_conversations(conversations: Iterable[Conversation], fraction: float,
                           seed: int = 0) -> Iterator[Conversation]:
    """For a stable `fraction` of the conversations (chosen by a hash of id and seed): the call cut
    right after one of the agent's spoken replies to a tool result, plus a caller turn asking to
    hear it again. The result ends on that user turn (an open prompt); its id is
    `<id>:readback`. Conversations with no such reply are skipped."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"readback fraction: expected 0..1, got {fraction}")
    for conv in conversations:
        if fraction == 0.0 or stable_unit(f"readback:{seed}:{conv.id}") >= fraction:
            continue
        replies = [i for i, m in enumerate(conv.messages)
                   if i > 0 and m["role"] == "assistant" and m.get("content")
                   and conv.messages[i - 1]["role"] == "tool"]
        if not replies:
            continue
        cut = replies[int(stable_unit(f"readback-at:{seed}:{conv.id}") * len(replies))]
        ask = ASKS[int(stable_unit(f"readback-ask:{seed}:{conv.id}") * len(ASKS))]
        yield Conversation(f"{conv.id}:readback", conv.split, conv.domain, conv.scenario,
                           conv.tools, [*conv.messages[: cut + 1], {"role": "user", "content": ask}])
