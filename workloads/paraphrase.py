"""Paraphrases for the agent's scripted lines.

Each scenario scripts its agent replies with one or two phrasings, so across thousands of
generated calls the same sentences recur. A drafter trained on the target's answers to those
calls learns the sentences by heart instead of learning to copy from the context, and then
fails on the unseen scenarios, where the target copies lines it never saw in training
(docs/history/benchmarks-logbook.md, "What τ ≥ 6 would take"). `vary` rewrites a line with
interchangeable phrases, so a given sentence rarely recurs across calls while staying natural
and keeping every value (names, dates, amounts, ids) exactly as the script wrote it.
"""

from __future__ import annotations

import random
import re

# Interchangeable phrasings; a match of any member may become any member of its group. Members
# are matched case-sensitively on word boundaries, longest first, so keep capitalised forms
# apart from lower-case ones.
GROUPS: tuple[tuple[str, ...], ...] = (
    ("Sure.", "Of course.", "Okay.", "Alright.", "Absolutely.", "Certainly.", "No problem."),
    ("Sure,", "Of course,", "Okay,", "Alright,", "Absolutely,", "Certainly,"),
    ("Sure thing.", "You got it.", "Happy to.", "Gladly."),
    ("I can help with that.", "I can help you with that.", "Happy to help with that.",
     "Let me help you with that.", "I can take care of that."),
    ("You're welcome.", "You're very welcome.", "My pleasure.", "Anytime."),
    ("You're welcome!", "You're very welcome!", "My pleasure!", "Happy to help!"),
    ("Have a great day!", "Have a good one!", "Take care!", "Enjoy the rest of your day!",
     "Have a nice day!"),
    ("Anything else I can help with?", "Is there anything else I can do for you?",
     "Can I help with anything else?", "Is there anything else you need?"),
    ("Thanks for calling", "Thank you for calling", "Thanks for reaching out to"),
    ("Goodbye!", "Bye now!", "Bye!", "Bye for now!"),
    ("Done,", "All set,", "That's done,", "Okay, done,"),
    ("Done:", "All set:", "That's done:", "Okay, done:"),
    ("Done.", "All set.", "That's done.", "You're all set."),
    ("What's", "What is", "Can you tell me", "Could you tell me"),
    ("what's", "what is"),
    ("Can I get", "Could I get", "May I have", "Can I have", "Could you give me"),
    ("can I get", "could I get", "may I have", "can I have"),
    ("The line tests good from our side.", "The line looks fine on our end.",
     "Your line tests clean from here.", "Everything looks normal on the line from our side."),
    ("It already shipped", "It's already shipped", "That one already shipped", "It's already on its way"),
    ("If it hasn't shipped yet, yes.", "As long as it hasn't shipped, yes.", "Yes, if it hasn't shipped yet.",
     "We can, if it's not out the door yet."),
    ("should take a look", "needs to take a look", "should come out and check it"),
    ("Could you check with", "Can you check with", "Would you mind checking with", "Maybe check with"),
    ("with no fee", "with no charge", "free of charge", "at no cost"),
    ("First,", "To start,", "Before we begin,", "First off,"),
    ("What day and time would work better?", "When would work better for you?",
     "What day and time suit you better?", "When would you prefer instead?"),
    ("would you like", "do you want", "would you prefer"),
    ("Would you like", "Do you want", "Would you prefer"),
    ("I'm sorry to hear that.", "Sorry to hear that.", "Oh no, I'm sorry.", "That's frustrating, I'm sorry."),
    ("I'm sorry,", "Sorry,", "Unfortunately,", "I'm afraid"),
    ("is booked for", "is scheduled for", "is set for", "is confirmed for"),
    ("is cancelled", "has been cancelled", "is now cancelled"),
    ("It's cancelled", "That's cancelled", "It's been cancelled"),
    ("I see", "I can see", "I'm showing"),
    ("I don't see", "I'm not seeing", "I can't find", "There's no record of"),
    ("about two", "around two", "roughly two"),
    ("right now", "at the moment", "currently"),
    ("Let me", "I'll", "Let me just", "Give me a second to"),
    ("Thanks,", "Thank you,", "Great,", "Perfect,", "Wonderful,"),
    ("Thanks.", "Thank you.", "Great.", "Perfect.", "Wonderful."),
    ("Got it.", "Understood.", "Okay, noted.", "Alright, got it."),
    ("will arrive", "should arrive", "will get to you", "should reach you"),
    ("call us", "give us a call", "reach out"),
    ("Call us", "Give us a call", "Reach out"),
    ("the wait is", "the hold time is", "you'll wait"),
    ("The wait is", "The hold time is", "The expected wait is"),
    ("I'm transferring you now.", "I'll put you through now.", "Connecting you now.",
     "Let me transfer you."),
    ("How can I help?", "How can I help you?", "What can I do for you?", "How may I help?"),
    ("What can I do for you today?", "How can I help you today?", "What brings you in today?",
     "What can I help with today?"),
)

_TOKEN: dict[str, tuple[str, ...]] = {member: group for group in GROUPS for member in group}
# One boundary check around the whole alternation, not one inside each of its ~200 members:
# the same matches (a member whose right boundary fails still backtracks to the next one), 29x
# faster per line (dev box: 150 -> 5 us), and agent lines are varied for every prompt built.
_PATTERN = re.compile(r"(?<![\w'])(?:" + "|".join(
    re.escape(m) for m in sorted(_TOKEN, key=len, reverse=True)) + r")(?![\w'])")


def vary(rng: random.Random, text: str, p: float = 0.6) -> str:
    """`text` with each known phrase swapped, with probability p, for a random member of its
    group (which may be itself). Values and any text outside the phrase table stay as written."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"paraphrase probability: expected 0..1, got {p}")

    def swap(match: re.Match[str]) -> str:
        phrase = match.group(0)
        return rng.choice(_TOKEN[phrase]) if rng.random() < p else phrase

    return _PATTERN.sub(swap, text)
