"""Readback turns cut a call after an agent reply to a tool result and add the caller's ask."""

from __future__ import annotations

import hashlib
import json

import pytest

from turnspec.workloads import generate_conversations, readback_conversations
from turnspec.workloads.readback import ASKS, HOLDS, RETURNS


def test_readback_cuts_after_a_reply_to_a_tool_result() -> None:
    convs = generate_conversations(40, seed=3, split="train")
    out = list(readback_conversations(convs, 1.0, seed=3))
    assert len(out) >= 35                                # nearly every call has such a reply
    by_id = {c.id: c for c in convs}
    held = set()
    for r in out:
        src = by_id[r.id.removesuffix(":readback")]
        ask = r.messages[-1]
        assert ask == {"role": "user", "content": ask["content"]}
        holds = 0
        while (r.messages[-2 - 2 * holds]["content"], r.messages[-3 - 2 * holds]["content"]) in \
                {(a, c) for c, a in HOLDS}:
            holds += 1
        assert holds <= 2 and ask["content"] in (RETURNS if holds else ASKS)
        n = len(r.messages) - 1 - 2 * holds
        assert r.messages[:n] == src.messages[:n]        # a prefix of the original call
        assert r.messages[n - 1]["role"] == "assistant" and r.messages[n - 1]["content"]
        assert r.messages[n - 2]["role"] == "tool"
        assert (r.split, r.scenario, r.tools) == (src.split, src.scenario, src.tools)
        held.add(holds)
    assert held == {0, 1, 2}                             # the reply to copy is not always the last


def test_readback_fraction_is_stable_and_seeded() -> None:
    convs = generate_conversations(200, seed=0, split="train")
    ids = lambda frac, seed: [c.id for c in readback_conversations(convs, frac, seed=seed)]  # noqa: E731
    assert ids(0.0, 0) == []
    quarter = ids(0.25, 0)
    assert 25 <= len(quarter) <= 75 and quarter == ids(0.25, 0)
    assert set(quarter) <= set(ids(0.5, 0))              # a larger fraction extends a smaller
    assert quarter != ids(0.25, 1)
    with pytest.raises(ValueError, match="fraction"):
        list(readback_conversations(convs, -0.1))


def test_readback_turns_are_pinned() -> None:
    convs = list(readback_conversations(generate_conversations(200, seed=11, split="all"), 0.3, seed=11))
    digest = hashlib.sha256(json.dumps([c.to_record() for c in convs], sort_keys=True).encode()).hexdigest()[:16]
    assert digest == "3b8937e1109f6058"
