"""Token trees as SGLang's grammar walk reads a tree: each node's first child and next sibling,
from the nodes' parents, in one launch (the torch form is a dozen small ops, each a host cost
on a verify step of trees under a grammar, which is host-bound at small models).

  parents : [b, N] int64, node i's parent (-1 for the anchor)
  first   : [b, N] int64, node i's first child in node order (-1 for none)
  sibling : [b, N] int64, the next node after i with i's parent (-1 for none)

A chain's links are SGLang's own linear ones (first[i] = i + 1, no siblings).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


def reference_tree_links(parents: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Torch reference (any device). `n` stands for "none" as a Python scalar: a tensor of it
    would be a copy that waits."""
    b, n = parents.shape
    idx = torch.arange(n, device=parents.device)
    child = parents.unsqueeze(1) == idx.view(1, n, 1)                  # [b, p, j]: p is j's parent
    first = torch.where(child, idx, n).amin(dim=2)
    later = (parents.unsqueeze(2) == parents.unsqueeze(1)) & (idx.view(1, 1, n) > idx.view(1, n, 1))
    sibling = torch.where(later, idx, n).amin(dim=2)                   # [b, j]: the next with j's parent
    return first.masked_fill(first == n, -1), sibling.masked_fill(sibling == n, -1)


@triton.jit
def _tree_links_kernel(par_ptr, first_ptr, sib_ptr, N: tl.constexpr, NP: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    j = tl.arange(0, NP)                       # the node a link is for (axis 0)
    i = tl.arange(0, NP)                       # the candidate child / sibling (axis 1)
    live = j < N
    par_j = tl.load(par_ptr + row * N + j, mask=live, other=-2)
    par_i = tl.load(par_ptr + row * N + i, mask=i < N, other=-2)
    child = (par_i[None, :] == j[:, None]) & (i[None, :] < N)
    first = tl.min(tl.where(child, i[None, :], NP), axis=1)
    later = (par_i[None, :] == par_j[:, None]) & (i[None, :] > j[:, None]) & (i[None, :] < N)
    sib = tl.min(tl.where(later, i[None, :], NP), axis=1)
    tl.store(first_ptr + row * N + j, tl.where(first == NP, -1, first).to(tl.int64), mask=live)
    tl.store(sib_ptr + row * N + j, tl.where(sib == NP, -1, sib).to(tl.int64), mask=live)


def triton_tree_links(parents: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The Triton path (CUDA, or the CPU under TRITON_INTERPRET=1)."""
    b, n = parents.shape
    par = parents.contiguous()
    first = torch.empty((b, n), dtype=torch.int64, device=parents.device)
    sibling = torch.empty((b, n), dtype=torch.int64, device=parents.device)
    if b and n:
        _tree_links_kernel[(b,)](par, first, sibling, N=n, NP=max(16, triton.next_power_of_2(n)))
    return first, sibling


def tree_links(parents: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each node's first child and next sibling [b, N] int64 (-1 for none; children in node
    order) from `parents` [b, N] int64 (-1 the root). Triton on CUDA, the torch reference
    elsewhere."""
    if parents.dim() != 2 or parents.dtype != torch.int64:
        raise ValueError(f"parents: expected [b, N] int64, got {tuple(parents.shape)} "
                         f"{parents.dtype}")
    return (triton_tree_links if parents.is_cuda else reference_tree_links)(parents)
