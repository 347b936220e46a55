"""benchmarks/grammar_walk.py: it times the plugin's walk on real voice rows, and refuses a peer
whose masks differ from the plugin's (a walk from a source file that fills nothing)."""

from __future__ import annotations

import pytest

pytest.importorskip("xgrammar")

from turnspec.benchmarks.grammar_walk import measure, table  # noqa: E402


def test_measures_the_plugins_walk_on_chains_and_trees(smollm2_dir):
    r = measure(str(smollm2_dir), convs=1, nodes=8, seed=0, source=None)
    assert r["peer"].startswith("not measured")
    for shape in ("chain", "tree"):
        assert r[shape]["plugin"]["rows"] > 10 and r[shape]["plugin"]["p50_us"] > 0
        assert "sglang" not in r[shape]
    assert "chain  plugin p50" in table(r)


def test_a_peer_that_writes_other_masks_is_refused(smollm2_dir, tmp_path):
    source = tmp_path / "spec_utils.py"
    source.write_text("def traverse_tree(retrieve_next_token, retrieve_next_sibling, "
                      "draft_tokens, grammar, allocate_token_bitmask, vocab_size=None):\n"
                      "    pass\n")
    with pytest.raises(AssertionError, match="masks differ"):
        measure(str(smollm2_dir), convs=1, nodes=8, seed=0, source=str(source))
