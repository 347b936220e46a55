"""Tree attention mask: the reference against the layout written out by hand, the Triton kernel
(interpreted on CPU) against the reference on fresh random trees and odd prefix lengths, into a
poisoned output buffer so that every cell must have been written."""

from __future__ import annotations

import random

import pytest
import torch

from turnspec.engine.spec.tree import ancestor_mask, build_tree, padded
from turnspec.kernels.tree_mask import (
    ancestors_of,
    mask_offsets,
    mask_size,
    reference_tree_mask,
    tree_mask,
    tree_mask_of_parents,
    triton_tree_mask,
    triton_tree_mask_of_parents,
)


def random_ancestors(seed: int, rows: int, nodes: int) -> torch.Tensor:
    """Each row's tree from random blocks over a small vocabulary, padded to `nodes` by hand."""
    rng = random.Random(seed)
    out = torch.zeros((rows, nodes, nodes), dtype=torch.bool)
    for r in range(rows):
        blocks = [[rng.randrange(3) for _ in range(rng.randint(1, nodes))] for _ in range(4)]
        m = ancestor_mask(build_tree(7, blocks, nodes))
        out[r, : len(m), : len(m)] = torch.tensor(m)
        for i in range(len(m), nodes):  # padding nodes: children of the anchor
            out[r, i, 0] = out[r, i, i] = True
    return out


def test_reference_layout_by_hand() -> None:
    anc = torch.tensor([[[1, 0], [1, 1]], [[1, 0], [0, 1]]], dtype=torch.bool)
    lens = torch.tensor([1, 0])
    got = reference_tree_mask(anc, lens).tolist()
    assert got == [1, 1, 0,  1, 1, 1,   1, 0,  0, 1]
    assert mask_offsets(lens, 2).tolist() == [0, 6] and mask_size(lens, 2) == 10


@pytest.mark.parametrize(("rows", "nodes", "seed"), [(1, 1, 0), (3, 5, 1), (4, 16, 2),
                                                     (2, 33, 3), (5, 7, 4)])
def test_triton_equals_the_reference(rows: int, nodes: int, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    lens = torch.randint(0, 300, (rows,), generator=g)
    lens[0] = 0 if rows > 1 else lens[0]  # an empty prefix too
    anc = random_ancestors(seed, rows, nodes)
    want = reference_tree_mask(anc, lens)
    out = torch.full((want.numel() + 5,), 7, dtype=torch.uint8)   # poisoned, with a tail
    got = triton_tree_mask(anc, lens, out)
    assert torch.equal(got[: want.numel()], want)
    assert got[want.numel():].tolist() == [7] * 5                   # nothing written past the end
    assert torch.equal(tree_mask(anc, lens), want)                  # CPU dispatch: the reference


def test_bad_inputs_are_named() -> None:
    anc = torch.ones((2, 3, 3), dtype=torch.bool)
    with pytest.raises(ValueError, match=r"ancestors: expected \[b, N, N\]"):
        tree_mask(torch.ones((2, 3, 4), dtype=torch.bool), torch.zeros(2, dtype=torch.int64))
    with pytest.raises(ValueError, match="seq_lens: expected int64"):
        tree_mask(anc, torch.zeros(2, dtype=torch.int32))
    with pytest.raises(ValueError, match="out: expected at least 18 cells"):
        triton_tree_mask(anc, torch.zeros(2, dtype=torch.int64), torch.zeros(3, dtype=torch.uint8))
    with pytest.raises(ValueError, match="out: expected a flat uint8"):
        triton_tree_mask(anc, torch.zeros(2, dtype=torch.int64), torch.zeros(18, dtype=torch.bool))


def test_unchecked_never_writes_past_the_buffer() -> None:
    """`checked=False` (no host sync for the size): a buffer too small keeps its guard cells."""
    anc = random_ancestors(3, 2, 5).to(torch.uint8)
    lens = torch.tensor([4, 6])
    need = mask_size(lens, 5)
    big = torch.full((need + 4,), 9, dtype=torch.uint8)
    triton_tree_mask(anc, lens, big, checked=False)
    assert big[:need].tolist() == reference_tree_mask(anc, lens).tolist()
    assert big[need:].tolist() == [9] * 4
    small = torch.full((need + 4,), 9, dtype=torch.uint8)
    triton_tree_mask(anc, lens, small[: need - 7], checked=False)
    assert small[need - 7 :].tolist() == [9] * 11


@pytest.mark.parametrize("seed", range(8))
def test_ancestors_of_parents_is_the_host_mask(seed: int) -> None:
    """The device closure of a batch's parent arrays equals tree.ancestor_mask row by row."""
    rng = random.Random(seed)
    trees = [build_tree(0, [[rng.randrange(3) for _ in range(rng.randint(1, 15))]
                            for _ in range(rng.randint(1, 4))], 16) for _ in range(3)]
    trees = [padded(t, 16, 0) for t in trees]
    parents = torch.tensor([t.parents for t in trees])
    got = ancestors_of(parents)
    assert got.dtype == torch.uint8
    assert got.tolist() == [[[int(x) for x in row] for row in ancestor_mask(t)] for t in trees]


@pytest.mark.parametrize("seed", range(6))
def test_the_mask_from_parents_is_the_mask_of_their_ancestors(seed: int) -> None:
    """The step's one-launch form walks each node's parents in the kernel: the same cells."""
    rng = random.Random(50 + seed)
    trees = [padded(build_tree(0, [[rng.randrange(3) for _ in range(rng.randint(1, 15))]
                                   for _ in range(rng.randint(1, 5))], 16), 16, 0) for _ in range(3)]
    parents = torch.tensor([t.parents for t in trees])
    lens = torch.tensor([rng.randrange(0, 40) for _ in trees])
    want = reference_tree_mask(ancestors_of(parents), lens)
    dev = "cuda" if torch.cuda.is_available() else "cpu"  # compiled there, else interpreted
    out = torch.full((want.numel() + 5,), 7, dtype=torch.uint8, device=dev)
    triton_tree_mask_of_parents(parents.to(dev), lens.to(dev), out)
    out = out.cpu()
    assert out[: want.numel()].tolist() == want.tolist() and out[want.numel():].tolist() == [7] * 5


def test_the_dispatch_from_parents_is_the_reference_off_cuda() -> None:
    """`tree_mask_of_parents` (what the plugin calls): on the CPU the reference of the parents'
    ancestors, returned or written into `out`."""
    parents = torch.tensor([padded(build_tree(0, [[1, 2], [1, 3], [4]], 8), 8, 0).parents])
    lens = torch.tensor([5])
    want = reference_tree_mask(ancestors_of(parents), lens)
    assert tree_mask_of_parents(parents, lens).tolist() == want.tolist()
    out = torch.full((want.numel() + 3,), 7, dtype=torch.uint8)
    assert tree_mask_of_parents(parents, lens, out) is out
    assert out[: want.numel()].tolist() == want.tolist() and out[want.numel():].tolist() == [7] * 3
