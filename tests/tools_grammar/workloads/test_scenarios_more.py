"""The extra train scenarios (scenarios_more_a/b.py): two per domain, all in train, valid calls,
and none of the tools that only held-out scenarios use."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from turnspec.tools_grammar.workloads import Conversation, generate_conversations, scenarios_for

MODULES = ("scenarios_more_a", "scenarios_more_b")
HELDOUT_ONLY = {"airline.add_checked_bag", "bank.report_lost_card", "clinic.request_prescription_refill",
                "ecommerce.track_refund", "restaurant.modify_reservation", "ride_hailing.report_lost_item",
                "utilities.set_up_payment_plan"}


def _new_names() -> set[str]:
    return {s.name for s in scenarios_for("all") if s.script.__module__.rsplit(".", 1)[-1] in MODULES}


def _calls(conv: Conversation) -> list[tuple[str, dict]]:
    return [(m["tool_calls"][0]["function"]["name"], json.loads(m["tool_calls"][0]["function"]["arguments"]))
            for m in conv.messages if m["role"] == "assistant" and m.get("tool_calls")]


@pytest.fixture(scope="module")
def train() -> list[Conversation]:
    return [c for seed in range(4) for c in generate_conversations(600, seed=seed, split="train")]


def test_sixteen_new_train_scenarios_two_per_domain() -> None:
    new = _new_names()
    assert len(new) == 16
    assert Counter(name.split(".")[0] for name in new) == {dom: 2 for dom in (
        "airline", "bank", "clinic", "ecommerce", "restaurant", "ride_hailing", "telecom", "utilities")}
    assert new <= {s.name for s in scenarios_for("train")}
    assert not new & {s.name for s in scenarios_for("heldout")}


def test_new_scenarios_appear_and_are_valid(train: list[Conversation]) -> None:
    new = _new_names()
    mine = [c for c in train if c.scenario in new]
    assert {c.scenario for c in mine} == new
    assert min(Counter(c.scenario for c in mine).values()) >= 20
    for conv in mine:
        assert conv.split == "train" and conv.domain == conv.scenario.split(".")[0]
        msgs = conv.messages
        assert msgs[0]["role"] == "system" and msgs[-1]["role"] == "assistant" and msgs[-1]["content"]
        names = {t["function"]["name"] for t in conv.tools}
        calls = _calls(conv)
        assert calls
        assert all(name in names for name, _ in calls)
        assert any(m["role"] == "assistant" and m.get("content") and msgs[i - 1]["role"] == "tool"
                   for i, m in enumerate(msgs))                  # a spoken reply to a tool result
        for i, m in enumerate(msgs):
            if m["role"] == "tool":
                json.loads(m["content"])
                assert msgs[i - 1]["tool_calls"][0]["id"] == m["tool_call_id"]


def test_new_scenarios_only_use_tools_of_existing_train_scenarios(train: list[Conversation]) -> None:
    new = _new_names()
    used_new = {f"{c.domain}.{name}" for c in train if c.scenario in new for name, _ in _calls(c)}
    used_old = {f"{c.domain}.{name}" for c in train if c.scenario not in new for name, _ in _calls(c)}
    assert not used_new & HELDOUT_ONLY
    assert used_new <= used_old
    assert not used_old & HELDOUT_ONLY                           # the list above is still held-out-only
    held = {f"{c.domain}.{name}" for c in generate_conversations(400, seed=0, split="heldout") for name, _ in _calls(c)}
    assert held >= HELDOUT_ONLY
