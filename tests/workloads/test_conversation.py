"""The generated workload: size, determinism, splits, message structure, valid tool calls."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from turnspec.tools_grammar.schema import parse_tools, validate_arguments
from turnspec.workloads import (
    Conversation,
    conversation_id_of,
    export_jsonl,
    generate_conversations,
    generic_prompts,
    load_jsonl,
    scenarios_for,
    turns_for_prompting,
)
from turnspec.workloads.catalog import DOMAINS, WORKLOADS, scenario


@pytest.fixture(scope="module")
def convs() -> list[Conversation]:
    return generate_conversations(5000, seed=0)


def test_five_thousand_with_both_splits(convs: list[Conversation]) -> None:
    splits = Counter(c.split for c in convs)
    # 8 held-out scenarios of 97 (workload 2): about 8 % of calls (about 410 of 5000)
    assert splits["train"] > 4000 and splits["heldout"] > 320 and set(splits) == {"train", "heldout"}
    assert len({c.id for c in convs}) == 5000


def test_catalog_size_and_scenario_split() -> None:
    train, heldout = scenarios_for("train"), scenarios_for("heldout")
    assert not {s.name for s in train} & {s.name for s in heldout}
    domains = {s.domain.name for s in train + heldout}
    assert len(domains) >= 8
    assert all(any(s.domain.name == dom for s in heldout) for dom in domains)  # every domain holds one out
    tools = {t["function"]["name"] for s in train + heldout for t in s.domain.all_tools}
    assert len(tools) >= 40
    with pytest.raises(ValueError, match="split: expected train, heldout or all"):
        scenarios_for("test")  # type: ignore[arg-type]


def test_split_filter_and_determinism() -> None:
    held = generate_conversations(200, seed=5, split="heldout")
    assert {c.split for c in held} == {"heldout"}
    assert {c.split for c in generate_conversations(200, seed=5, split="train")} == {"train"}
    again = generate_conversations(300, seed=5, split="heldout")
    assert [c.to_record() for c in again[:200]] == [c.to_record() for c in held]  # larger n extends smaller
    other = generate_conversations(200, seed=6, split="heldout")
    assert [c.messages for c in other] != [c.messages for c in held]
    # a datagen shard builds only its own indices: the same conversations, under their ids
    some = generate_conversations(300, seed=5, split="heldout", indices=[250, 3, 17])
    assert [c.to_record() for c in some] == [again[i].to_record() for i in (250, 3, 17)]
    assert [c.id for c in some] == [conversation_id_of(5, "heldout", i) for i in (250, 3, 17)]
    with pytest.raises(ValueError, match=r"indices: expected values in \[0, 300\)"):
        generate_conversations(300, seed=5, split="heldout", indices=[300])


def test_messages_are_openai_chat_with_valid_calls(convs: list[Conversation]) -> None:
    specs = {}
    for conv in convs[:1500]:
        if conv.domain not in specs:
            specs[conv.domain] = {t.name: t for t in parse_tools(conv.tools)}
        msgs = conv.messages
        assert msgs[0]["role"] == "system" and "Today is" in msgs[0]["content"]
        assert msgs[-1]["role"] == "assistant" and isinstance(msgs[-1]["content"], str) and msgs[-1]["content"]
        for i, m in enumerate(msgs):
            assert m["role"] in ("system", "user", "assistant", "tool")
            if m["role"] == "assistant" and m.get("tool_calls"):
                (call,) = m["tool_calls"]
                assert call["type"] == "function" and call["id"].startswith("call_")
                args = json.loads(call["function"]["arguments"])
                assert call["function"]["arguments"] == json.dumps(args, separators=(",", ":"), ensure_ascii=False)
                validate_arguments(specs[conv.domain][call["function"]["name"]], args)
                result = msgs[i + 1]
                assert result["role"] == "tool" and result["tool_call_id"] == call["id"]
                json.loads(result["content"])
            if m["role"] == "tool":
                assert msgs[i - 1].get("tool_calls")


def test_caller_turns_sound_spoken(convs: list[Conversation]) -> None:
    users = [m["content"] for c in convs for m in c.messages if m["role"] == "user"]
    share = lambda pattern: sum(pattern in u for u in users) / len(users)  # noqa: E731
    assert share("um, ") + share("uh, ") > 0.1
    assert share("no wait, make that") > 0.001
    assert share(" thirty") + share(" fifteen") + share(" people") > 0.05
    assert not any(any(ch.isdigit() for ch in u) for u in users if "code" not in u and "ride" not in u and "booking" not in u
                   and "confirmation" not in u)


def test_prompting_turns(convs: list[Conversation]) -> None:
    sample = convs[:200]
    turns = list(turns_for_prompting(sample))
    assert len(turns) == sum(m["role"] == "assistant" for c in sample for m in c.messages)
    kinds = Counter(t.kind for t in turns)
    assert kinds["tool_call"] > 0.25 * len(turns) and kinds["text"] > 0.25 * len(turns)
    by_id = {c.id: c for c in sample}
    for t in turns:
        conv = by_id[t.conversation_id]
        assert t.messages == conv.messages[:t.turn] and t.expected is conv.messages[t.turn] and t.tools == conv.tools
    open_turns = list(turns_for_prompting(generic_prompts(5)))
    assert [t.kind for t in open_turns] == ["open"] * 5 and open_turns[0].messages[-1]["role"] == "user"


def _digest(convs: list[Conversation]) -> str:
    return hashlib.sha256(json.dumps([c.to_record() for c in convs], sort_keys=True).encode()).hexdigest()[:16]


def test_generic_prompts() -> None:
    prompts = generic_prompts()
    assert len(prompts) >= 390 and len({p.messages[1]["content"] for p in prompts}) == len(prompts)
    assert all(p.split == "generic" and p.tools == [] for p in prompts)
    assert [p.id for p in generic_prompts(3)] == ["generic-0000", "generic-0001", "generic-0002"]
    # data/generic_prompts.json holds what the templates in code used to expand to, in order
    assert _digest(prompts) == "74ba3b362d6965a3"


def test_jsonl_round_trip(tmp_path: Path, convs: list[Conversation]) -> None:
    path = tmp_path / "w.jsonl"
    assert export_jsonl(convs[:50] + generic_prompts(5), path) == 55
    back = load_jsonl(path)
    assert [c.to_record() for c in back] == [c.to_record() for c in convs[:50] + generic_prompts(5)]
    record = json.loads(path.read_text().splitlines()[0])
    assert set(record) == {"id", "split", "domain", "scenario", "tools", "messages"}
    with pytest.raises(ValueError, match="missing fields \\['messages'\\]"):
        Conversation.from_record({k: v for k, v in record.items() if k != "messages"})
    with pytest.raises(ValueError, match="split must be one of"):
        Conversation.from_record({**record, "split": "test"})




def test_workload_one_is_the_workload_the_committed_completions_were_answered_for() -> None:
    # models/data/smollm2-dflash/responses-seed{7,8,9} rebuild only against these prompts: the
    # digests were taken from the code before workload versions existed
    assert _digest(generate_conversations(300, seed=9, split="train", workload=1)) == "f6c006b6da3d2a0c"
    assert _digest(generate_conversations(300, seed=9, split="heldout", workload=1)) == "a43452d33979736f"


def test_later_workloads_add_train_goals_and_keep_the_heldout_ones() -> None:
    assert WORKLOADS == (1, 2)
    v1, v2 = scenarios_for("all", 1), scenarios_for("all", 2)
    added = [s for s in v2 if s not in v1]
    assert len(v1) == 57 and len(added) == 40 and all(s.since == 2 and not s.heldout for s in added)
    assert scenarios_for("heldout", 1) == scenarios_for("heldout", 2)
    held = generate_conversations(300, seed=9, split="heldout", workload=2)
    assert _digest(held) == "a43452d33979736f"                   # the same held-out turns
    train = generate_conversations(300, seed=9, split="train", workload=2)
    assert {c.scenario for c in train} & {s.name for s in added}
    # the committed seed-10 completions (workload 2) rebuild only against these prompts
    assert _digest(generate_conversations(300, seed=10, split="train", workload=2)) == "72df3bc7018f061e"
    with pytest.raises(ValueError, match=r"workload: expected a version in \(1, 2\), got 3"):
        scenarios_for("train", 3)


def test_scenario_versions_are_checked() -> None:
    scenarios_for("all")                                         # registers the domains
    dom = DOMAINS["bank"]
    with pytest.raises(ValueError, match="held-out scenarios must be in every workload version"):
        scenario(dom, "never_registered", heldout=True, since=2)
    with pytest.raises(ValueError, match=r"since=0, expected a workload version in \(1, 2\)"):
        scenario(dom, "never_registered", since=0)


# Digests of the code before it moved into one module per domain (and its catalogs into JSON):
# (workload, split, seed) -> 200 conversations. Conversation i depends on the pool's order,
# which is the scenario names sorted, and on every script's random draws.
PINNED = [((1, "all", 3), "b0458ba80f5a683a"), ((2, "all", 3), "1e2aac5205dc3a78"),
          ((1, "train", 18), "c2dfecea068b3af0"), ((2, "train", 18), "995e449beecf24c2"),
          ((2, "heldout", 0), "7dd6a9d874add030")]


@pytest.mark.parametrize(("key", "digest"), PINNED)
def test_conversations_are_pinned_across_versions_and_splits(key: tuple[int, str, int], digest: str) -> None:
    workload, split, seed = key
    assert _digest(generate_conversations(200, seed=seed, split=split, workload=workload)) == digest  # type: ignore[arg-type]


def test_the_pool_is_ordered_by_scenario_name() -> None:
    for workload, digest in ((1, "33eef35c0c2613ac"), (2, "c4677ef5e1078242")):
        names = [s.name for s in scenarios_for("all", workload)]
        assert names == sorted(names)
        assert hashlib.sha256(json.dumps(names).encode()).hexdigest()[:16] == digest
