"""grammar_walk.walk: the grammar's mask rows over a verify tree, as the walk's definition gives
them node by node (the path from the anchor replayed on a fresh matcher), on real tool-call
grammars (the independent voice turns' tool sets through turnspec's grammar compiler, xgrammar)
from real states (each answer cut at several points), over trees from kernels/tree_links.py.
The answers, trees and grammar object are benchmarks/grammar_walk.py's, which times the walk
against SGLang's."""

from __future__ import annotations

import random

import pytest
import torch

xgr = pytest.importorskip("xgrammar")

from turnspec.benchmarks.grammar_walk import Grammar, answers, random_tree  # noqa: E402
from turnspec.engine.chat import ChatTemplate  # noqa: E402
from turnspec.engine.sglang_plugin.grammar_walk import around_traverse_tree, walk  # noqa: E402
from turnspec.kernels.tree_links import tree_links  # noqa: E402

UNTOUCHED = 0x5A5A5A5A  # a row the walk must not write


def expected_rows(compiled, prefix: list[int], parents: list[int], tokens: list[int],
                  vocab: int, words: int) -> torch.Tensor:
    """Each node's row by the definition: its path's tokens each allowed by the mask after the
    path before it (and below `vocab`), the grammar not terminated after the path: that mask."""
    out = torch.full((len(tokens), words), UNTOUCHED, dtype=torch.int32)
    probe = xgr.allocate_token_bitmask(1, vocab)
    for node in range(len(tokens)):
        path, at = [], node
        while at > 0:
            path.append(at)
            at = parents[at]
        matcher = fresh(compiled, prefix)
        ok = True
        for step in reversed(path):
            token = tokens[step]
            if matcher.is_terminated() or token >= vocab:
                ok = False
                break
            matcher.fill_next_token_bitmask(probe, 0)
            if not (int(probe[0, token // 32]) >> (token % 32)) & 1:
                ok = False
                break
            assert matcher.accept_token(token)
        if ok and not matcher.is_terminated():
            matcher.fill_next_token_bitmask(out, node)
    return out


def fresh(compiled, prefix: list[int]):
    matcher = xgr.GrammarMatcher(compiled)
    for token in prefix:
        assert matcher.accept_token(token)
    return matcher


@pytest.mark.parametrize("nodes", [1, 16, 32])
def test_walk_writes_each_rows_mask_by_its_path(smollm2_dir, nodes):
    chat = ChatTemplate.from_model_dir(smollm2_dir)
    vocab = chat.vocab_size
    words = xgr.allocate_token_bitmask(1, vocab).shape[1]
    rng, checked, filled = random.Random(nodes), 0, 0
    for compiled, answer in answers(chat, 6):
        for at in range(0, len(answer), max(len(answer) // 4, 1)):
            parents, tokens = random_tree(rng, answer, at, nodes, vocab)
            first, sibling = (t[0].tolist() for t in tree_links(torch.tensor([parents])))
            want = expected_rows(compiled, answer[:at], parents, tokens, vocab, words)
            matcher = fresh(compiled, answer[:at])
            grammar = Grammar(matcher)
            mask = torch.full((nodes, words), UNTOUCHED, dtype=torch.int32)
            walk(first, sibling, tokens, grammar, mask, vocab)
            assert torch.equal(mask, want), (at, parents, tokens)
            # the grammar ends where it started
            after, before = xgr.allocate_token_bitmask(1, vocab), xgr.allocate_token_bitmask(1, vocab)
            fresh(compiled, answer[:at]).fill_next_token_bitmask(before, 0)
            if not matcher.is_terminated():
                matcher.fill_next_token_bitmask(after, 0)
                assert torch.equal(after, before)
            checked += 1
            filled += int((want != UNTOUCHED).any(1).sum())
    assert checked > 30 and filled > checked * (min(nodes, 3) - 1)  # deep paths, not just anchors


def test_around_keeps_sglangs_walk_for_a_mask_it_does_not_read():
    """A mask that is not the packed int32 layout on the host goes to SGLang's own walk,
    arguments unchanged (the packed host mask takes `walk`, tested above)."""
    seen = []

    def original(*args):
        seen.append(args)

    links = torch.tensor([-1]), torch.tensor([-1]), torch.tensor([5])
    bools = torch.zeros((1, 64), dtype=torch.bool)
    around_traverse_tree(original, *links, "grammar", bools, vocab_size=64)
    assert len(seen) == 1 and seen[0][3] == "grammar" and seen[0][4] is bools
    assert seen[0][5] == 64
