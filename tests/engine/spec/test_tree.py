"""A row's blocks as one token tree: the trie merges shared prefixes within the node budget, the
mask lets each node see its ancestors only, and the accepted path is the longest prefix any
merged block shares with the target (what the embedded engine's shadow rows commit)."""

from __future__ import annotations

import random

import pytest
import torch

from turnspec.engine.spec.tree import (
    accepted_path,
    ancestor_mask,
    batch_trees,
    best_first,
    build_tree,
    padded,
)
from turnspec.kernels.tree_accept import linearized


def test_shared_prefixes_are_one_node_and_the_budget_cuts_the_last_blocks() -> None:
    blocks = [[5, 6, 7, -1], [5, 6, 9, 9], [8, -1, -1, -1], [5, 6, 7, 1]]
    t = build_tree(4, blocks, 16)
    assert t.tokens == (4, 5, 6, 7, 9, 9, 8, 1)
    assert t.parents == (-1, 0, 1, 2, 2, 4, 0, 3)
    assert t.depths == (0, 1, 2, 3, 3, 4, 1, 4)
    cut = build_tree(4, blocks, 5)
    assert cut.tokens == (4, 5, 6, 7, 9)           # the second block cut after its first new node
    assert build_tree(4, [], 3).tokens == (4,)
    with pytest.raises(ValueError, match="expected at least 1"):
        build_tree(4, blocks, 0)


def test_the_mask_is_each_nodes_ancestors_and_itself() -> None:
    t = build_tree(4, [[5, 6], [5, 7], [8]], 8)    # 0 -> 1 -> {2, 3}; 0 -> 4
    m = ancestor_mask(t)
    assert [[int(x) for x in row] for row in m] == [
        [1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [1, 1, 0, 1, 0], [1, 0, 0, 0, 1]]
    p = padded(t, 7, filler=0)
    assert len(p) == 7 and p.parents[5:] == (0, 0) and p.depths[5:] == (1, 1)
    assert ancestor_mask(p)[6] == [True] + [False] * 5 + [True]
    with pytest.raises(ValueError, match="does not fit"):
        padded(t, 3, 0)


def test_best_first_keeps_the_most_likely_nodes_as_a_tree() -> None:
    """Path values: 1 .9, 2 .45, 3 .225, 4 .1125; 7 .36, 8 .324; 9 .05. Five nodes below the
    anchor keep 1, 2, 7, 8, 3, in insertion order, parents renumbered."""
    blocks = [[1, 2, 3, 4], [1, 7, 8], [9, 10]]
    probs = [[.9, .5, .5, .5], [.9, .4, .9], [.05, .9]]
    t = best_first(5, blocks, probs, 6)
    assert t.tokens == (5, 1, 2, 3, 7, 8)
    assert t.parents == (-1, 0, 1, 2, 1, 4)
    assert t.depths == (0, 1, 2, 3, 2, 3)
    assert best_first(5, blocks, probs, 1).tokens == (5,)
    assert len(best_first(5, blocks, probs, 99)) == 9    # every node fits
    with pytest.raises(ValueError, match="probability rows"):
        best_first(5, blocks, probs[:2], 4)


@pytest.mark.parametrize("seed", range(20))
def test_best_first_is_ancestor_closed_and_maximal(seed: int) -> None:
    """Random blocks and probabilities (ties included): every kept node's parent is kept and
    comes before it, and no dropped node is worth more than the least kept one."""
    rng = random.Random(seed)
    blocks = [[rng.randrange(3) for _ in range(5)] for _ in range(rng.randint(1, 6))]
    probs = [[rng.choice([1.0, 0.5, rng.random()]) for _ in b] for b in blocks]
    full = best_first(9, blocks, probs, 10**6)
    n = rng.randint(1, len(full))
    t = best_first(9, blocks, probs, n)
    assert len(t) == n
    assert all(0 <= t.parents[i] < i and t.depths[i] == t.depths[t.parents[i]] + 1
               for i in range(1, n))
    worth = {tuple(_path(full, i)): _value(full, blocks, probs, i) for i in range(len(full))}
    kept = {tuple(_path(t, i)) for i in range(n)}
    assert kept <= worth.keys()
    least = min(worth[k] for k in kept)
    assert all(v <= least + 1e-12 for k, v in worth.items() if k not in kept)


def _value(t, blocks, probs, i: int) -> float:
    """A node's value: the best product of probabilities of a block that reaches it."""
    want = _path(t, i)
    best = 0.0 if want else 1.0
    for b, ps in zip(blocks, probs, strict=True):
        if b[: len(want)] == want:
            v = 1.0
            for p in ps[: len(want)]:
                v *= p
            best = max(best, v)
    return best


def _path(t, i: int) -> list[int]:
    out = []
    while i > 0:
        out.append(t.tokens[i])
        i = t.parents[i]
    return out[::-1]


@pytest.mark.parametrize("seed", range(30))
def test_the_path_is_the_longest_block_prefix_the_target_shares(seed: int) -> None:
    """Random blocks over a 3-token vocabulary (so they share prefixes) and a random target per
    node: with the budget large enough for every block, the accepted path's length is the best
    block's accepted drafts, as the shadow rows would commit it."""
    rng = random.Random(seed)
    blocks = [[rng.randrange(3) for _ in range(6)] for _ in range(rng.randint(1, 8))]
    t = build_tree(9, blocks, 1 + 6 * len(blocks))
    truth = [rng.randrange(3) for _ in range(7)]   # the target's greedy continuation
    # the target's choice after a node depends on the path to it; on its greedy continuation
    # the choice after depth d is truth[d] wherever the path so far is truth's prefix
    target = [truth[d] for d in t.depths]
    path = accepted_path(t, target)
    best = max(next((k for k, (b, x) in enumerate(zip(blk, truth, strict=False)) if b != x),
                    len(blk)) for blk in blocks)
    assert len(path) - 1 == best
    assert [t.tokens[i] for i in path[1:]] == truth[:best]


@pytest.mark.parametrize("seed", range(10))
def test_linearized_is_the_block_a_linear_accept_takes_the_path_from(seed: int) -> None:
    """Per-node outputs reordered by `order` put the path first; a linear accept over `block`
    against the reordered targets accepts exactly the path and takes the same bonus."""
    import torch

    from turnspec.kernels.dflash_accept import reference_dflash_accept
    from turnspec.kernels.tree_accept import reference_tree_accept

    rng = random.Random(seed)
    rows, n = 5, 12
    trees = [padded(build_tree(9, [[rng.randrange(3) for _ in range(6)] for _ in range(4)], n),
                    n, 2) for _ in range(rows)]
    tokens = torch.tensor([t.tokens for t in trees])
    parents = torch.tensor([t.parents for t in trees])
    truth = [[rng.randrange(3) for _ in range(n + 1)] for _ in range(rows)]
    target = torch.tensor([[truth[r][d] for d in t.depths] for r, t in enumerate(trees)])
    path, length = reference_tree_accept(tokens, parents, target)
    order, block = linearized(path, length, tokens, target, vocab=3)
    assert sorted(order[0].tolist()) == list(range(n))                  # a permutation
    for r in range(rows):
        a = int(length[r])
        assert order[r, : a + 1].tolist() == path[r, : a + 1].tolist()
    lin_target = target.gather(1, order)                                # the reordered outputs
    accept, bonus = reference_dflash_accept(block[:, 1:], lin_target)
    assert accept.tolist() == length.tolist()
    assert bonus.tolist() == target.gather(1, path.gather(1, length[:, None])).squeeze(1).tolist()


@pytest.mark.parametrize("seed", range(10))
def test_a_plans_rows_become_padded_trees_the_device_walk_accepts_as_the_host(seed: int) -> None:
    """A step's plan (each row's chosen block, then extra blocks by rank, interleaved across
    rows) as [rows, N] trees: every row has exactly N nodes, parents before children, depths
    from its parents, and the tree-accept kernel's torch reference walks each row's tree to the
    path the host walk finds on that row's own tree."""
    from turnspec.kernels.tree_accept import reference_tree_accept

    rng = random.Random(seed)
    rows, n = rng.randint(1, 4), 12
    anchors = [rng.randrange(3) for _ in range(rows)]
    owner = list(range(rows)) + [rng.randrange(rows) for _ in range(rng.randint(0, 6))]
    blocks = [[rng.randrange(3) for _ in range(5)] + [-1] for _ in owner]
    tokens, parents, depths = batch_trees(anchors, owner, blocks, n)
    assert tokens.shape == parents.shape == depths.shape == (rows, n)
    target = torch.randint(0, 3, (rows, n), generator=torch.Generator().manual_seed(seed))
    path, length = reference_tree_accept(tokens, parents, target)
    for r in range(rows):
        own = build_tree(anchors[r], [b for o, b in zip(owner, blocks, strict=True) if o == r], n)
        assert tokens[r, : len(own)].tolist() == list(own.tokens) and tokens[r, 0] == anchors[r]
        pars = parents[r].tolist()
        assert pars[0] == -1 and all(0 <= p < i for i, p in enumerate(pars) if i)
        assert all(depths[r, i] == depths[r, p] + 1 for i, p in enumerate(pars) if i)
        host = accepted_path(padded(own, n, anchors[r]), target[r].tolist())
        assert path[r, : len(host)].tolist() == host and length[r] == len(host) - 1
