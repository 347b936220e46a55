"""The loop guard's rule on token lists, and on real SmolLM2 text: it fires on the loops the
model fell into and never on replies that ended on their own (from `turnspec bench
voice-defaults`, docs/voice-defaults.md)."""

from __future__ import annotations

import pytest

from turnspec.engine.loop_guard import LoopDetector, LoopGuard, first_loop
from turnspec.engine.protocol import SamplingParams

# Loops SmolLM2-135M-Instruct wrote (greedy or sampled) on voice turns.
LOOPS = [
    "I'm not a dentist. I'm a chatbot designed to assist with dental-related tasks. "
    "I'm not a dentist. I'm a chatbot designed to assist with dental-related tasks. "
    "I'm not a dentist. I'm a chatbot designed to assist with dental-related tasks. ",
    "The song is a classic example of a duet, where two instruments are played "
    "simultaneously.\n\nThe song is a classic example of a duet, where two instruments are "
    "played simultaneously.\n\nThe song is a classic example of a duet, where two instruments "
    "are played simultaneously.",
]
# Replies that ended on their own: repetitive phrasing, counting, read-backs, lists.
LEGIT = [
    "I'm sorry, but I'm unable to assist with cleaning on a Thursday. I'm sorry, but I'm "
    "unable to assist with cleaning on a Thursday.",
    ", ".join(str(i) for i in range(1, 101)),
    "Your confirmation code is K 7 Q 2 9 X. That's K as in kilo, 7, Q as in quebec, 2, 9, "
    "X as in x-ray. Again: K 7 Q 2 9 X.",
    "Here are three tips: 1. Go to bed at the same time every night. 2. Keep your bedroom "
    "dark and cool. 3. Avoid screens for an hour before bed. 1. Go to bed at the same time.",
    "Sure. Your table for four is booked for seven thirty tonight at Luigi's. Your table "
    "for four is booked, and you will get a text with the details.",
]


def test_validation_says_what_was_expected() -> None:
    with pytest.raises(ValueError, match="loop_guard.ngram: expected an integer >= 2"):
        LoopGuard(ngram=1)
    with pytest.raises(ValueError, match="loop_guard.repeats"):
        LoopGuard(repeats=1)
    with pytest.raises(ValueError, match="cannot hold 3 copies of a 12-gram"):
        LoopGuard(window=20)
    with pytest.raises(ValueError, match="loop_guard: expected a LoopGuard"):
        SamplingParams(loop_guard={"ngram": 4})  # type: ignore[arg-type]


def test_fires_on_the_token_that_completes_the_third_copy() -> None:
    unit = list(range(100, 120))  # a 20-token sentence, said again and again
    tokens = [1, 2, 3] + unit * 4
    cut = first_loop(tokens, LoopGuard(ngram=12, repeats=3))
    # the first 12 tokens of the unit occur for the third time at the 12th token of copy 3
    assert cut == 3 + 2 * 20 + 12
    assert first_loop(tokens[:cut - 1], LoopGuard(ngram=12, repeats=3)) is None


def test_a_run_of_one_token_is_a_loop_and_two_copies_are_not() -> None:
    assert first_loop([7] * 13, LoopGuard(ngram=12, repeats=2)) == 13
    assert first_loop([7] * 13, LoopGuard(ngram=12, repeats=3)) is None
    assert first_loop(list(range(30)) * 2, LoopGuard(ngram=12, repeats=3)) is None


def test_window_forgets_old_occurrences() -> None:
    unit = list(range(50, 62))  # 12 tokens
    spaced = unit + list(range(200, 260)) + unit + list(range(300, 360)) + unit
    assert first_loop(spaced, LoopGuard(ngram=12, repeats=3)) == len(spaced)
    assert first_loop(spaced, LoopGuard(ngram=12, repeats=3, window=100)) is None
    det = LoopDetector(LoopGuard(ngram=2, repeats=2, window=4))
    assert [det.push(t) for t in (1, 2, 3, 4, 1, 2)] == [False] * 6
    assert det.emitted == 6


def test_real_loops_fire_and_real_replies_do_not(smollm2_tokenizer) -> None:
    guard = LoopGuard()
    for text in LOOPS:
        ids = smollm2_tokenizer.encode(text, add_special_tokens=False)
        cut = first_loop(ids, guard)
        assert cut is not None and cut < len(ids), text
    for text in LEGIT:
        ids = smollm2_tokenizer.encode(text, add_special_tokens=False)
        assert first_loop(ids, guard) is None, text
