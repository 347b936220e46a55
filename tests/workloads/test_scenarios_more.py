"""The extra train scenarios (scenarios_more_a/b.py: two per domain; workload 2's
scenarios_v2_*.py: five more per domain): all in train, valid calls, and none of the tools that
only held-out scenarios use."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from turnspec.workloads import Conversation, generate_conversations, scenarios_for

ADDED = {  # module set -> (new train scenarios per domain, the workload version they join)
    ("scenarios_more_a", "scenarios_more_b"): (2, 1),
    ("scenarios_v2_hospitality", "scenarios_v2_money", "scenarios_v2_care", "scenarios_v2_commerce"): (5, 2),
}
DOMAINS = ("airline", "bank", "clinic", "ecommerce", "restaurant", "ride_hailing", "telecom", "utilities")
HELDOUT_ONLY = {"airline.add_checked_bag", "bank.report_lost_card", "clinic.request_prescription_refill",
                "ecommerce.track_refund", "restaurant.modify_reservation", "ride_hailing.report_lost_item",
                "utilities.set_up_payment_plan"}


def _new_names(modules: tuple[str, ...]) -> set[str]:
    return {s.name for s in scenarios_for("all") if s.script.__module__.rsplit(".", 1)[-1] in modules}


def _calls(conv: Conversation) -> list[tuple[str, dict]]:
    return [(m["tool_calls"][0]["function"]["name"], json.loads(m["tool_calls"][0]["function"]["arguments"]))
            for m in conv.messages if m["role"] == "assistant" and m.get("tool_calls")]


@pytest.fixture(scope="module")
def train() -> list[Conversation]:
    return [c for seed in range(4) for c in generate_conversations(1000, seed=seed, split="train")]


@pytest.mark.parametrize("modules", list(ADDED))
def test_new_train_scenarios_per_domain(modules: tuple[str, ...]) -> None:
    new = _new_names(modules)
    per_domain, version = ADDED[modules]
    assert Counter(name.split(".")[0] for name in new) == dict.fromkeys(DOMAINS, per_domain)
    assert new <= {s.name for s in scenarios_for("train", version)}
    earlier = {s.name for s in scenarios_for("train", version - 1)} if version > 1 else set()
    assert not new & earlier
    assert not new & {s.name for s in scenarios_for("heldout")}


@pytest.mark.parametrize("modules", list(ADDED))
def test_new_scenarios_appear_and_are_valid(train: list[Conversation], modules: tuple[str, ...]) -> None:
    new = _new_names(modules)
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


@pytest.mark.parametrize("modules", list(ADDED))
def test_new_scenarios_only_use_tools_of_existing_train_scenarios(train: list[Conversation],
                                                                  modules: tuple[str, ...]) -> None:
    new = _new_names(modules)
    used_new = {f"{c.domain}.{name}" for c in train if c.scenario in new for name, _ in _calls(c)}
    added = _new_names(tuple(m for group in ADDED for m in group))
    used_old = {f"{c.domain}.{name}" for c in train if c.scenario not in added for name, _ in _calls(c)}
    assert not used_new & HELDOUT_ONLY
    assert used_new <= used_old
    assert not used_old & HELDOUT_ONLY                           # the list above is still held-out-only
    held = {f"{c.domain}.{name}" for c in generate_conversations(400, seed=0, split="heldout") for name, _ in _calls(c)}
    assert held >= HELDOUT_ONLY
