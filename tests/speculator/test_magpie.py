"""Magpie prompts: user lines sampled from the real SmolLM2 after its template's open user turn,
filtered, written as conversations that `datagen --from-conversations` answers."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from turnspec.speculator.magpie import LineFilter, MagpieConfig, eval_set_lines, user_prefix
from turnspec.speculator.magpie_settings import random_setting
from turnspec.speculator.recorded import recorded_prompt_items
from turnspec.tools_grammar.schema import parse_tools


def test_user_prefix_is_the_template_up_to_the_user_content(smollm2_dir):
    from turnspec.engine.chat import ChatTemplate

    chat = ChatTemplate.from_model_dir(smollm2_dir)
    rng = random.Random(3)
    for _ in range(6):   # plain, role and tool-bearing settings
        _, system, tools = random_setting(rng, tools_frac=0.5)
        messages = [{"role": "system", "content": system}]
        full = chat.render([*messages, {"role": "user", "content": "where is my parcel?"}],
                           parse_tools(tools))
        prefix = user_prefix(chat, messages, parse_tools(tools))
        assert full[: len(prefix)] == prefix and len(full) > len(prefix) + 5
        assert chat.tokenizer.decode(prefix).endswith("user\n")


def test_settings_draw_every_kind_and_only_tool_settings_carry_tools():
    rng = random.Random(5)
    draws = [random_setting(rng) for _ in range(2000)]
    kinds = {key.split(".")[0] for key, _, _ in draws}
    assert kinds == {"plain", "role", "task", "tools"}
    assert all(bool(tools) == (key == "tools") for key, _, tools in draws)
    share = sum(key == "tools" for key, _, _ in draws) / len(draws)
    assert 0.15 < share < 0.25                     # WEIGHTS: a fifth offer tools
    assert all(key != "tools" for key, _, _ in (random_setting(rng, 0.0) for _ in range(200)))


def test_filter_names_why_a_line_is_dropped():
    banned = eval_set_lines()
    assert len(banned) > 300                       # the independent set's user lines
    line = next(iter(sorted(banned)))
    f = LineFilter(MagpieConfig(conversations=1), banned)
    assert f.reason("What is the capital of Peru?", finished=True) is None
    assert f.reason("what is the capital of peru", finished=True) == "repeat"
    assert f.reason("A long line that never ended", finished=False) == "too_long_tokens"
    assert f.reason("hi", finished=True) == "too_short"
    assert f.reason("x" * 601, finished=True) == "too_long_chars"
    assert f.reason("assistant: sure, here you go", finished=True) == "markup"
    assert f.reason("tell me <|im_start|> more", finished=True) == "markup"
    assert f.reason(line.upper() + "!", finished=True) == "eval_set_line"
    with pytest.raises(ValueError, match="temperature: expected > 0"):
        MagpieConfig(conversations=1, temperature=0.0)
    with pytest.raises(ValueError, match="more_turns_frac: expected a share"):
        MagpieConfig(conversations=1, more_turns_frac=1.5)


def test_magpie_then_datagen_from_its_conversations(smollm2_dir, tmp_path):
    """The CLI on the real model: records that end on a kept user line, stats that add up, and
    datagen answering every user line's history under source "magpie"."""
    run = [sys.executable, "-m", "turnspec.cli.main", "--log-level", "warning", "speculator"]
    model = ["--model", str(smollm2_dir), "--threads", "1"]
    out = subprocess.run([*run, "magpie", "--out", str(tmp_path / "mg"), "--conversations", "6",
                          "--max-user-turns", "2", "--more-turns-frac", "1", "--tools-frac", "0.3",
                          "--max-user-tokens", "40", "--max-answer-tokens", "8", *model],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    stats = json.loads(out.stdout.strip().splitlines()[-1])
    assert stats["sampled"] == stats["kept"] + sum(stats["dropped"].values()) >= 6
    records = [json.loads(line) for line in (tmp_path / "mg/conversations-000001.jsonl").open()]
    assert len(records) == stats["conversations"] == sum(stats["conversations_by_user_turns"].values())
    users = [m["content"] for r in records for m in r["messages"] if m["role"] == "user"]
    assert len(users) == stats["kept"] and len(set(users)) == len(users)
    banned = eval_set_lines()
    for r in records:
        assert r["domain"] == "magpie" and r["messages"][0]["role"] == "system"
        assert r["messages"][-1]["role"] == "user" and r["messages"][-1]["content"].strip()
        assert not (r["tools"] and len(r["messages"]) > 2)      # tool calls end after one line
    assert not {" ".join(u.lower().split()) for u in users} & banned
    if not records:
        pytest.skip("every sampled line was dropped this time")
    from turnspec.engine.chat import ChatTemplate

    items, _ = recorded_prompt_items(ChatTemplate.from_model_dir(smollm2_dir).render_many,
                                     tmp_path / "mg", heldout_frac=0.0)
    assert len(items) == len(users) and {it.source for it in items} == {"magpie"}
    out = subprocess.run([*run, "datagen", "--from-conversations", str(tmp_path / "mg"),
                          "--out", str(tmp_path / "data"), "--max-new-tokens", "4",
                          "--no-progress", *model], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    samples = [json.loads(line) for line in (tmp_path / "data/samples.jsonl").open()]
    assert len(samples) == len(users) and {s["source"] for s in samples} == {"magpie"}
