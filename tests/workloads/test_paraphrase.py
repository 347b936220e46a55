"""`vary` swaps known phrases inside their group and leaves everything else as written."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from turnspec.workloads import generate_conversations
from turnspec.workloads.paraphrase import GROUPS, vary


def test_vary_swaps_within_groups_and_keeps_values() -> None:
    line = "Sure. Your table is booked for seven thirty under Garcia, reference K 4 2. Have a great day!"
    seen = {vary(random.Random(seed), line) for seed in range(200)}
    assert len(seen) > 20
    for out in seen:
        assert "seven thirty under Garcia, reference K 4 2." in out
        assert any(out.startswith(m) for m in GROUPS[0])
    assert vary(random.Random(0), line, p=0.0) == line
    assert vary(random.Random(0), "The order 2 7 4 0 shipped.") == "The order 2 7 4 0 shipped."
    with pytest.raises(ValueError, match="probability"):
        vary(random.Random(0), line, p=1.5)


def test_vary_matches_whole_phrases_only() -> None:
    # "First," inside "Firstly," or "Done." inside "Undone." must not match.
    for seed in range(50):
        assert vary(random.Random(seed), "Firstly, it was Undone.", p=1.0) == "Firstly, it was Undone."


def test_groups_have_no_member_twice() -> None:
    counts = Counter(m for g in GROUPS for m in g)
    assert [m for m, n in counts.items() if n > 1] == []
    assert all(len(g) >= 2 for g in GROUPS)


def test_agent_lines_rarely_recur_across_calls() -> None:
    lines = Counter(m["content"] for c in generate_conversations(600, seed=4, split="train")
                    for m in c.messages if m["role"] == "assistant" and m.get("content"))
    # Without paraphrases the five commonest lines made ~16% of all agent lines; with them no
    # single line is more than ~3%.
    assert lines.most_common(1)[0][1] < 0.04 * sum(lines.values())
