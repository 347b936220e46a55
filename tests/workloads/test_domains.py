"""The domain modules (workloads/domains/<domain>.py): each holds its domain's scenarios; the
added train goals (two per domain in workload 1, five more per domain in workload 2) are all in
train, valid, and call none of the tools that only held-out scenarios use."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import pytest

from turnspec.workloads import Conversation, generate_conversations, scenarios_for
from turnspec.workloads.catalog import DOMAINS, load_tools
from turnspec.workloads.domains import MODULES, clinic, ecommerce, telecom

MORE = {  # train goals added to workload 1 after its first ones: failed lookups, changes of mind
    "airline": ("lookup_retry_then_seat", "delay_then_move"), "bank": ("cover_low_checking", "transfer_declined_retry"),
    "clinic": ("no_slots_then_book", "siblings_back_to_back"), "ecommerce": ("order_not_found_recheck", "return_two_items"),
    "restaurant": ("party_with_notes", "takeout_changed_order"), "ride_hailing": ("compare_car_types", "wrong_pickup_rebook"),
    "telecom": ("bill_then_cheaper_plan", "technician_date_full"),
    "utilities": ("account_recheck_then_pay", "moving_check_and_start"),
}
V2 = {  # workload 2's train goals (since=2)
    "airline": ("status_from_booking", "connection_check", "pickup_arrival", "seats_together_retry", "change_then_reseat"),
    "restaurant": ("cancel_name_mismatch", "takeout_sold_out", "two_nights_compare", "group_two_tables",
                   "tonight_bar_or_later"),
    "bank": ("paycheck_arrived", "move_part_of_checking", "pending_double_charge", "savings_interest_and_rate",
             "find_older_charge"),
    "utilities": ("outage_update_callback", "two_outages_one_address", "card_declined_then_bank", "start_date_unavailable",
                  "high_bill_explained"),
    "clinic": ("check_then_reschedule", "cancel_wrong_date_retry", "new_patient_slot_taken", "cancel_then_vaccination",
               "after_school_by_provider"),
    "telecom": ("outage_home_and_office", "line_test_finds_outage", "overage_upgrade_offer", "plan_change_account_retry",
                "bill_shows_old_plan"),
    "ecommerce": ("address_zip_rejected", "which_order_cancel", "cancel_too_late_then_track", "return_window_check",
                  "damaged_wants_replacement"),
    "ride_hailing": ("too_many_for_standard", "round_trip_estimates", "eta_ride_not_found", "book_for_someone_else",
                     "cancel_fee_rethink"),
}
ADDED = {"more": (MORE, 2, 1), "v2": (V2, 5, 2)}  # group -> (goals, new train goals per domain, version they join)
DOMAIN_NAMES = ("airline", "bank", "clinic", "ecommerce", "restaurant", "ride_hailing", "telecom", "utilities")
HELDOUT_ONLY = {"airline.add_checked_bag", "bank.report_lost_card", "clinic.request_prescription_refill",
                "ecommerce.track_refund", "restaurant.modify_reservation", "ride_hailing.report_lost_item",
                "utilities.set_up_payment_plan"}


def _new_names(group: str) -> set[str]:
    return {f"{domain}.{goal}" for domain, goals in ADDED[group][0].items() for goal in goals}


def _calls(conv: Conversation) -> list[tuple[str, dict]]:
    return [(m["tool_calls"][0]["function"]["name"], json.loads(m["tool_calls"][0]["function"]["arguments"]))
            for m in conv.messages if m["role"] == "assistant" and m.get("tool_calls")]


@pytest.fixture(scope="module")
def train() -> list[Conversation]:
    return [c for seed in range(4) for c in generate_conversations(1000, seed=seed, split="train")]


def test_one_module_per_domain_holds_all_its_scenarios() -> None:
    pool = scenarios_for("all")                                  # registers every domain
    assert sorted(MODULES) == sorted(DOMAIN_NAMES) == sorted(DOMAINS)
    for s in pool:
        assert s.script.__module__ == f"turnspec.workloads.domains.{s.domain.name}", s.name
    assert _new_names("v2") == {s.name for s in scenarios_for("all") if s.since == 2}


def test_constants_match_the_tool_catalogs() -> None:
    def options(dom: str, tool: str, arg: str) -> tuple[str, ...]:
        (fn,) = [t["function"] for t in DOMAINS[dom].tools if t["function"]["name"] == tool]
        return tuple(fn["parameters"]["properties"][arg]["enum"])

    assert options("clinic", "book_appointment", "visit_type") == clinic.VISITS
    assert options("telecom", "change_plan", "plan") == telecom.PLANS
    assert options("ecommerce", "start_return", "reason") == ecommerce.REASONS


def test_tool_catalogs_are_the_schemas_the_code_used_to_build() -> None:
    scenarios_for("all")
    tools = {name: dom.all_tools for name, dom in sorted(DOMAINS.items())}
    # key order included: chat templates render the schemas as written
    assert hashlib.sha256(json.dumps(tools, ensure_ascii=False).encode()).hexdigest()[:16] == "702d9dd96c965cef"
    with pytest.raises(ValueError, match=r"tools 'nowhere': expected a catalog at .*nowhere\.json"):
        load_tools("nowhere")


@pytest.mark.parametrize("group", list(ADDED))
def test_new_train_scenarios_per_domain(group: str) -> None:
    new = _new_names(group)
    _, per_domain, version = ADDED[group]
    assert Counter(name.split(".")[0] for name in new) == dict.fromkeys(DOMAIN_NAMES, per_domain)
    assert new <= {s.name for s in scenarios_for("train", version)}
    earlier = {s.name for s in scenarios_for("train", version - 1)} if version > 1 else set()
    assert not new & earlier
    assert not new & {s.name for s in scenarios_for("heldout")}


@pytest.mark.parametrize("group", list(ADDED))
def test_new_scenarios_appear_and_are_valid(train: list[Conversation], group: str) -> None:
    new = _new_names(group)
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


@pytest.mark.parametrize("group", list(ADDED))
def test_new_scenarios_only_use_tools_of_existing_train_scenarios(train: list[Conversation], group: str) -> None:
    new = _new_names(group)
    used_new = {f"{c.domain}.{name}" for c in train if c.scenario in new for name, _ in _calls(c)}
    added = set().union(*map(_new_names, ADDED))
    used_old = {f"{c.domain}.{name}" for c in train if c.scenario not in added for name, _ in _calls(c)}
    assert not used_new & HELDOUT_ONLY
    assert used_new <= used_old
    assert not used_old & HELDOUT_ONLY                           # the list above is still held-out-only
    held = {f"{c.domain}.{name}" for c in generate_conversations(400, seed=0, split="heldout") for name, _ in _calls(c)}
    assert held >= HELDOUT_ONLY
