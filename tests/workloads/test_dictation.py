"""Dictation turns cut a call after an agent reply and add random details to read back."""

from __future__ import annotations

import hashlib
import json

import pytest

from turnspec.workloads import dictation_conversations, generate_conversations
from turnspec.workloads.dictation import ASKS, LEADS


def test_dictation_cuts_after_a_reply_and_asks_for_a_read_back() -> None:
    convs = generate_conversations(60, seed=5, split="train")
    out = list(dictation_conversations(convs, 1.0, seed=5))
    assert len(out) >= 55
    by_id = {c.id: c for c in convs}
    for d in out:
        src = by_id[d.id.removesuffix(":dictation")]
        n = len(d.messages) - 1
        assert d.messages[:n] == src.messages[:n]            # a prefix of the original call
        assert d.messages[n - 1]["role"] == "assistant" and d.messages[n - 1]["content"]
        ask = d.messages[-1]
        assert ask["role"] == "user" and ask["content"].startswith(LEADS)
        assert ask["content"].endswith(ASKS) and ask["content"].count(", ") >= 1
        assert (d.split, d.scenario, d.tools) == (src.split, src.scenario, src.tools)
    asks = [d.messages[-1]["content"] for d in out]
    assert len(set(asks)) == len(asks)                        # details are random per call


def test_dictation_fraction_is_stable_and_seeded() -> None:
    convs = generate_conversations(200, seed=0, split="train")
    ids = lambda frac, seed: [c.id for c in dictation_conversations(convs, frac, seed=seed)]  # noqa: E731
    assert ids(0.0, 0) == []
    quarter = ids(0.25, 0)
    assert 25 <= len(quarter) <= 75 and quarter == ids(0.25, 0)
    assert set(quarter) <= set(ids(0.5, 0))
    assert quarter != ids(0.25, 1)
    assert list(dictation_conversations(convs[:3], 1.0)) == list(dictation_conversations(convs[:3], 1.0))
    with pytest.raises(ValueError, match="fraction"):
        list(dictation_conversations(convs, 1.1))


def test_dictation_turns_are_pinned() -> None:
    convs = list(dictation_conversations(generate_conversations(200, seed=11, split="all"), 0.3, seed=11))
    digest = hashlib.sha256(json.dumps([c.to_record() for c in convs], sort_keys=True).encode()).hexdigest()[:16]
    assert digest == "c4f6860101f32694"
