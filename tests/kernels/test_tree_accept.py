"""Greedy accept over token trees: the reference against the host walk of engine/spec/tree.py,
the Triton kernel (interpreted on CPU) against the reference, on fresh random trees over small
vocabularies (so siblings share tokens and paths run deep) and targets that follow a path."""

from __future__ import annotations

import random

import pytest
import torch

from turnspec.engine.spec.tree import accepted_path, build_tree, padded
from turnspec.kernels.tree_accept import reference_tree_accept, tree_accept, triton_tree_accept

DEV = "cuda" if torch.cuda.is_available() else "cpu"  # the settle kernel there, else interpreted


def random_rows(seed: int, rows: int, nodes: int) -> tuple[list, torch.Tensor, torch.Tensor, torch.Tensor]:
    rng = random.Random(seed)
    trees, target = [], []
    for _ in range(rows):
        blocks = [[rng.randrange(3) for _ in range(rng.randint(1, 8))] for _ in range(5)]
        t = padded(build_tree(9, blocks, nodes), nodes, filler=rng.randrange(3))
        trees.append(t)
        truth = [rng.randrange(3) for _ in range(nodes + 1)]
        # mostly the greedy continuation by depth (deep paths), sometimes noise
        target.append([truth[d] if rng.random() < 0.9 else rng.randrange(3) for d in t.depths])
    tokens = torch.tensor([t.tokens for t in trees])
    parents = torch.tensor([t.parents for t in trees])
    return trees, tokens, parents, torch.tensor(target)


@pytest.mark.parametrize(("rows", "nodes", "seed"), [(1, 1, 0), (4, 16, 1), (3, 33, 2), (6, 7, 3)])
def test_reference_and_triton_walk_as_the_host_does(rows: int, nodes: int, seed: int) -> None:
    trees, tokens, parents, target = random_rows(seed, rows, nodes)
    path, length = reference_tree_accept(tokens, parents, target)
    for r, t in enumerate(trees):
        want = accepted_path(t, target[r].tolist())
        assert path[r, : len(want)].tolist() == want and int(length[r]) == len(want) - 1
        assert (path[r, len(want):] == -1).all()
    got_path, got_len = triton_tree_accept(tokens, parents, target)
    assert torch.equal(got_path, path) and torch.equal(got_len, length)
    assert torch.equal(tree_accept(tokens, parents, target)[0], path)   # CPU: the reference
    assert max(length.tolist()) >= 1 or nodes == 1


def test_shapes_and_dtypes_are_checked() -> None:
    t = torch.zeros((2, 4), dtype=torch.int64)
    with pytest.raises(ValueError, match=r"expected one \[b, N\] shape"):
        tree_accept(t, t[:, :3], t)
    with pytest.raises(ValueError, match="expected int64"):
        tree_accept(t, t, t.to(torch.int32))


@pytest.mark.parametrize(("rows", "nodes", "seed"), [(4, 16, 11), (3, 9, 12), (5, 16, 13)])
def test_settle_kernel_puts_the_step_in_path_order_as_the_reference(rows: int, nodes: int,
                                                                    seed: int) -> None:
    """One launch for the accept, the path order, the rewritten block and the counter: the
    same as the reference (the accept reference, then `linearized`), for branching rows and
    rows left as they are."""
    from turnspec.kernels.tree_accept import reference_tree_settle, triton_tree_settle

    rng = random.Random(seed)
    _, tokens, parents, target = random_rows(seed, rows, nodes)
    drafted = torch.tensor([[rng.randrange(3) for _ in range(nodes - 1)] for _ in range(rows)])
    drafted[0] = tokens[0, 1:]  # a row whose tokens are the drafter's own
    branching = torch.tensor([rng.random() < 0.7 for _ in range(rows)])
    out = {}
    for name, fn, dev in (("torch", reference_tree_settle, "cpu"),
                          ("kernel", triton_tree_settle, DEV)):
        tok, counts = tokens.clone().to(dev), torch.zeros(1, dtype=torch.int64, device=dev)
        flat = fn(tok, parents.to(dev), target.to(dev), drafted.to(dev), branching.to(dev),
                  counts, 3)
        out[name] = (tok.tolist(), flat.tolist(), counts.tolist())
    assert out["kernel"] == out["torch"]
    tok, flat, _ = out["torch"]
    for r in range(rows):
        here = flat[r * nodes : (r + 1) * nodes]
        assert sorted(here) == list(range(r * nodes, (r + 1) * nodes))  # a permutation of the row
        if not branching[r]:
            assert here == list(range(r * nodes, (r + 1) * nodes)) and tok[r] == tokens[r].tolist()
