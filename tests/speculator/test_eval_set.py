"""The independent evaluation set (speculator/eval/): its size and spread, its tool calls, its
JSONL against the hand-written source, its prompts, and that none of its user lines appears in
anything a drafter trains on: the workload generator's calls (every source datagen draws from,
over many seeds, both splits and every workload version) and, where the clone has them
(`bash scripts/gpu/data.sh restore`), the exact calls behind the committed completions and
the committed Magpie conversations."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from turnspec.speculator import eval_source
from turnspec.speculator.data import Sample, open_text
from turnspec.speculator.eval_set import SOURCES, counts, eval_prompt_items, load_eval_set
from turnspec.speculator.train_io import eval_splits
from turnspec.tools_grammar.schema import find_tool, parse_tools, validate_arguments
from turnspec.workloads import (
    dictation_conversations,
    generate_conversations,
    generic_prompts,
    readback_conversations,
    synthetic_conversations,
)
from turnspec.workloads.catalog import WORKLOADS
from turnspec.workloads.domains import MODULES as WORKLOAD_DOMAINS

PACKS = Path(__file__).resolve().parents[2] / "models" / "data" / "smollm2-dflash"


def _norm(text: str) -> str:
    """Lowercase words only: a line that differs from a training line in case, punctuation or
    spacing alone still counts as the same line."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _user_lines(convs) -> set[str]:
    return {_norm(m["content"]) for c in convs for m in c.messages if m["role"] == "user"}


def _eval_lines() -> dict[str, str]:
    """normalised user line -> the eval conversation it is in."""
    return {_norm(m["content"]): c.id for convs in load_eval_set().values() for c in convs
            for m in c.messages if m["role"] == "user"}


def _leaks(train_lines: set[str]) -> list[tuple[str, str]]:
    return sorted((cid, line) for line, cid in _eval_lines().items() if line in train_lines)


def test_size_and_spread():
    c = counts()
    assert c["voice_turns"] >= 300 and c["generic_prompts"] >= 100, c
    domains = set(c["turns_per_domain"])
    new = domains - set(WORKLOAD_DOMAINS)
    assert len(domains) >= 10 and 2 * len(new) >= len(domains), (domains, new)
    assert c["tool_call_turns"] >= 100 and len(c["generic_kinds"]) >= 10, c
    for conv in load_eval_set()["independent-voice"]:
        turns = sum(m["role"] == "assistant" for m in conv.messages)
        assert 2 <= turns <= 6, (conv.id, turns)
        assert 2 <= len(conv.tools) <= 5, (conv.id, len(conv.tools))
        system = conv.messages[0]["content"]                 # persona, business, today's date
        assert re.search(r"(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), "
                         r"\w+ \d{1,2}, 20\d\d", system), (conv.id, system)


def test_every_tool_call_validates_and_is_answered():
    calls = 0
    for conv in load_eval_set()["independent-voice"]:
        tools = parse_tools(conv.tools)
        for i, m in enumerate(conv.messages):
            for call in m.get("tool_calls") or []:
                tool = find_tool(tools, call["function"]["name"])
                assert tool is not None, (conv.id, call)
                args = call["function"]["arguments"]
                validate_arguments(tool, json.loads(args))
                assert args == json.dumps(json.loads(args), separators=(",", ":"),
                                          ensure_ascii=False)            # compact, as rendered
                reply = conv.messages[i + 1]
                assert reply["role"] == "tool" and reply["tool_call_id"] == call["id"]
                json.loads(reply["content"])
                calls += 1
    assert calls >= 100


def test_jsonl_is_the_hand_written_source():
    """The committed JSONL is exactly what `python -m turnspec.speculator.eval_source` writes
    from src/ (so an edit to one without the other fails here)."""
    built = {"independent-voice": eval_source.voice_conversations(),
             "independent-generic": eval_source.generic_conversations()}
    for source, convs in load_eval_set().items():
        assert [c.to_record() for c in convs] == [c.to_record() for c in built[source]], source


def test_prompts_are_held_out_and_named_by_their_source(smollm2_dir):
    from turnspec.engine.chat import ChatTemplate

    items, skipped = eval_prompt_items(ChatTemplate.from_model_dir(smollm2_dir).render_many)
    c = counts()
    assert skipped == 0 and len(items) == c["voice_turns"] + c["generic_prompts"]
    assert {it.split for it in items} == {"heldout"}
    assert {it.source for it in items} == set(SOURCES)
    samples = [Sample(it.id, it.split, it.source, it.prompt_ids + (1, 2),
                      (0,) * len(it.prompt_ids) + (1, 1)) for it in items]
    splits = eval_splits(samples, 1000)
    assert {k: len(v) for k, v in splits.items()} == {
        "independent-generic": c["generic_prompts"], "independent-voice": c["voice_turns"]}


@pytest.mark.slow
def test_no_user_line_comes_from_the_workload_generator():
    """Every source datagen draws prompts from, over seeds 0-19, both splits and every workload
    version: the scripted calls, their readback and dictation extensions, the synthetic calls
    and the generic prompts."""
    lines: set[str] = _user_lines(generic_prompts())
    for seed in range(20):
        for split, n in (("train", 1500), ("heldout", 300)):
            for workload in WORKLOADS:
                convs = generate_conversations(n, seed=seed, split=split, workload=workload)
                lines |= _user_lines(convs)
                lines |= _user_lines(readback_conversations(convs, 1.0, seed=seed))
                lines |= _user_lines(dictation_conversations(convs, 1.0, seed=seed))
            lines |= _user_lines(synthetic_conversations(300, seed=seed, split=split))
    assert len(lines) > 100_000
    assert _leaks(lines) == []


def _pack_calls(pack: Path) -> set[str]:
    """The user lines of every call whose turns a completions pack answered, rebuilt from its
    datagen arguments (readback and dictation extensions of each call included)."""
    with open_text(pack) as f:
        build = {"workload": 1, **json.loads(f.readline())["build"]}
        ids = {json.loads(line)["id"].split(":", 1)[0] for line in f}
    seed, wanted = build["seed"], {"train": set(), "heldout": set()}
    synth = {"train": set(), "heldout": set()}
    for cid in ids:
        parts = cid.split("-")
        if parts[0] == "synthetic":
            synth[parts[1]].add(int(parts[3]))
        elif parts[0] in wanted:
            wanted[parts[0]].add(int(parts[2]))
    lines = _user_lines(generic_prompts(build["generic"]))
    for split, n in (("train", build["tool_conversations"]),
                     ("heldout", build["heldout_conversations"])):
        convs = generate_conversations(n, seed=seed, split=split, workload=build["workload"],
                                       indices=sorted(wanted[split]))
        lines |= _user_lines(convs) | _user_lines(readback_conversations(convs, 1.0, seed=seed))
        lines |= _user_lines(dictation_conversations(convs, 1.0, seed=seed))
    for split, n in (("train", build["synthetic_conversations"]),
                     ("heldout", build["synthetic_heldout"])):
        lines |= _user_lines(synthetic_conversations(n, seed=seed, split=split,
                                                     indices=sorted(synth[split])))
    return lines


@pytest.mark.slow
@pytest.mark.skipif(not any(PACKS.glob("responses-*.jsonl.xz")),
                    reason="models/data/ is not in this clone (bash scripts/gpu/data.sh restore "
                           "writes it back); the generator test above still runs")
def test_no_user_line_is_in_the_committed_completions():
    for pack in sorted(PACKS.glob("responses-*.jsonl.xz")):
        lines = _pack_calls(pack)
        assert len(lines) > 1000, pack
        assert _leaks(lines) == [], pack.name


@pytest.mark.skipif(not any(PACKS.glob("magpie-*.jsonl.xz")),
                    reason="models/data/ is not in this clone (bash scripts/gpu/data.sh restore "
                           "writes it back)")
def test_no_user_line_is_in_the_committed_magpie_conversations():
    """The broad prompts the default drafter trained on (`speculator magpie`: user lines the
    target sampled itself), as `datagen --from-conversations` read them."""
    for pack in sorted(PACKS.glob("magpie-*.jsonl.xz")):
        with open_text(pack) as f:
            lines = {_norm(m["content"]) for line in f for m in json.loads(line)["messages"]
                     if m["role"] == "user"}
        assert len(lines) > 1000, pack
        assert _leaks(lines) == [], pack.name
