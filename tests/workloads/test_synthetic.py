"""Synthetic calls: random tools and results per call, valid, seeded, rarely repeating."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import pytest

from turnspec.tools_grammar.schema import parse_tools, validate_arguments
from turnspec.workloads import synthetic_conversations, turns_for_prompting
from turnspec.workloads.synthetic import synthetic_id


def test_synthetic_calls_are_valid_and_seeded() -> None:
    convs = synthetic_conversations(120, seed=3)
    assert synthetic_conversations(40, seed=3) == convs[:40]            # prefix-stable
    assert synthetic_conversations(40, seed=4) != convs[:40]
    # one datagen shard's calls alone, equal to the same calls of the whole stream
    assert synthetic_conversations(120, seed=3, indices=[7, 2]) == [convs[7], convs[2]]
    assert convs[7].id == synthetic_id(3, "train", 7)
    held = synthetic_conversations(40, seed=3, split="heldout")
    assert {c.split for c in held} == {"heldout"} and {c.split for c in convs} == {"train"}
    assert not {c.messages[1]["content"] for c in held} & {c.messages[1]["content"] for c in convs}
    for conv in convs:
        specs = {s.name: s for s in parse_tools(conv.tools)}
        assert conv.messages[0]["role"] == "system" and conv.messages[-1]["role"] in ("assistant", "user")
        calls = [m for m in conv.messages if m.get("tool_calls")]
        assert calls, conv.id
        for m in calls:
            fn = m["tool_calls"][0]["function"]
            validate_arguments(specs[fn["name"]], json.loads(fn["arguments"]))
        results = [json.loads(m["content"]) for m in conv.messages if m["role"] == "tool"]
        assert len(results) == len(calls) and all("status" in r for r in results)
        assert list(turns_for_prompting([conv]))                         # gives prompts


def test_what_the_target_would_copy_rarely_recurs() -> None:
    """The point of the generator: tool names and result keys are new in most calls, so a
    drafter cannot memorise them (the scripted scenarios repeat theirs in every call)."""
    convs = synthetic_conversations(400, seed=0)
    names = Counter(t["function"]["name"] for c in convs for t in c.tools)
    keys = Counter(k for c in convs for m in c.messages if m["role"] == "tool"
                   for k in json.loads(m["content"]) if k != "status")
    own = {n: k for n, k in names.items() if n not in ("end_call", "transfer_to_human")}
    assert len(own) > 0.8 * sum(own.values())                 # most tool names occur once
    assert max(own.values()) < 0.02 * len(convs)
    assert keys["wait_minutes"] > 0                           # the common closing's transfer
    del keys["wait_minutes"]
    assert len(keys) > 500 and max(keys.values()) < 0.05 * len(convs)


def test_bad_arguments_say_what_was_expected() -> None:
    with pytest.raises(ValueError, match="n: expected >= 0"):
        synthetic_conversations(-1)
    with pytest.raises(ValueError, match="train or heldout"):
        synthetic_conversations(2, split="generic")
    with pytest.raises(ValueError, match=r"indices: expected values in \[0, 2\)"):
        synthetic_conversations(2, indices=[0, 2])


def test_calls_are_pinned() -> None:
    def digest(split: str) -> str:
        convs = synthetic_conversations(50, seed=11, split=split)
        return hashlib.sha256(json.dumps([c.to_record() for c in convs], sort_keys=True).encode()).hexdigest()[:16]

    assert (digest("train"), digest("heldout")) == ("f57b60e87456db23", "ba93e8ae018c7de2")
