"""Readback turns cut a call after an agent reply to a tool result and add the caller's ask."""

from __future__ import annotations

import pytest

from turnspec.tools_grammar.workloads import generate_conversations, readback_conversations
from turnspec.tools_grammar.workloads.readback import ASKS


def test_readback_cuts_after_a_reply_to_a_tool_result() -> None:
    convs = generate_conversations(40, seed=3, split="train")
    out = list(readback_conversations(convs, 1.0, seed=3))
    assert len(out) >= 35                                # nearly every call has such a reply
    by_id = {c.id: c for c in convs}
    for r in out:
        src = by_id[r.id.removesuffix(":readback")]
        n = len(r.messages) - 1
        assert r.messages[:n] == src.messages[:n]        # a prefix of the original call
        assert r.messages[-1] == {"role": "user", "content": r.messages[-1]["content"]}
        assert r.messages[-1]["content"] in ASKS
        assert r.messages[-2]["role"] == "assistant" and r.messages[-2]["content"]
        assert r.messages[-3]["role"] == "tool"
        assert (r.split, r.scenario, r.tools) == (src.split, src.scenario, src.tools)


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
