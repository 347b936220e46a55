"""Tree links (kernels/tree_links.py): SGLang's linear links for a chain, a star written out by
hand, and the Triton kernel (interpreted on the CPU) against the torch reference on random trees
of the widths DFLASH verifies and odd ones, a node's parent always before it."""

from __future__ import annotations

import random

import pytest
import torch

from turnspec.kernels.tree_links import reference_tree_links, tree_links, triton_tree_links


def random_parents(seed: int, rows: int, nodes: int) -> torch.Tensor:
    rng = random.Random(seed)
    return torch.tensor([[-1] + [rng.randrange(i) for i in range(1, nodes)] for _ in range(rows)],
                        dtype=torch.int64)


@pytest.mark.parametrize("links", [reference_tree_links, triton_tree_links])
def test_a_chain_and_a_star(links) -> None:
    chain = torch.arange(5).expand(2, 5) - 1
    first, sibling = links(chain)
    assert first.tolist() == [[1, 2, 3, 4, -1]] * 2 and sibling.tolist() == [[-1] * 5] * 2
    first, sibling = links(torch.tensor([[-1, 0, 0, 1, 0]]))
    assert first.tolist() == [[1, 3, -1, -1, -1]] and sibling.tolist() == [[-1, 2, 4, -1, -1]]


@pytest.mark.parametrize(("seed", "rows", "nodes"), [(0, 1, 1), (1, 3, 5), (2, 4, 16),
                                                     (3, 2, 17), (4, 3, 32)])
def test_the_kernel_is_the_reference(seed: int, rows: int, nodes: int) -> None:
    parents = random_parents(seed, rows, nodes)
    want = reference_tree_links(parents)
    got = triton_tree_links(parents)
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


def test_bad_parents_are_refused() -> None:
    with pytest.raises(ValueError, match=r"expected \[b, N\] int64"):
        tree_links(torch.zeros(4, dtype=torch.int64))
    with pytest.raises(ValueError, match=r"expected \[b, N\] int64"):
        tree_links(torch.zeros((1, 4), dtype=torch.int32))
