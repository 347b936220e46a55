"""Tree attention mask in the flattened layout SGLang's triton attention backend reads for a
verify with a custom mask (its `custom_mask` + `mask_indptr`; engine/spec/tree.py builds the
trees).

  ancestors : [b, N, N] uint8/bool, ancestors[r, q, k] = node k is node q or one of its
              ancestors in row r's tree (nodes in topological order, node 0 the anchor)
  seq_lens  : [b] int64, row r's committed prefix L_r (the tokens before the tree)
  out       : [>= sum_r N * (L_r + N)] uint8; row r owns the row-major [N, L_r + N] block from
              offset sum_{j<r} N * (L_j + N): its prefix columns [0, L_r) are 1 (every node sees
              the whole committed prefix), then the N x N ancestor cells.

One program per (row, node) writes that node's mask row; the prefix is most of the bytes at
long contexts (N * L_r), so the kernel is a strided fill, memory-bound.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


def _check(ancestors: torch.Tensor, seq_lens: torch.Tensor) -> None:
    if ancestors.dim() != 3 or ancestors.shape[1] != ancestors.shape[2]:
        raise ValueError(f"ancestors: expected [b, N, N], got {tuple(ancestors.shape)}")
    if ancestors.dtype not in (torch.uint8, torch.bool):
        raise ValueError(f"ancestors: expected uint8 or bool, got {ancestors.dtype}")
    if seq_lens.shape != (ancestors.shape[0],) or seq_lens.dtype != torch.int64:
        raise ValueError(f"seq_lens: expected int64 [{ancestors.shape[0]}], got "
                         f"{seq_lens.dtype} {tuple(seq_lens.shape)}")
    if seq_lens.device != ancestors.device:
        raise ValueError(f"ancestors/seq_lens: expected one device, got {ancestors.device} "
                         f"and {seq_lens.device}")


def mask_offsets(seq_lens: torch.Tensor, nodes: int) -> torch.Tensor:
    """Each row's first cell in the flattened mask [b] int64 (SGLang's `mask_indptr`)."""
    sizes = nodes * (seq_lens + nodes)
    return torch.cumsum(sizes, 0) - sizes


def mask_size(seq_lens: torch.Tensor, nodes: int) -> int:
    """Cells the flattened mask of these rows needs (a host sync if seq_lens is on a GPU)."""
    return int((nodes * (seq_lens + nodes)).sum())


def ancestors_of(parents: torch.Tensor) -> torch.Tensor:
    """parents [b, N] int64 (-1 for the root) -> `ancestors` [b, N, N] uint8, on the device:
    the reflexive-transitive closure of the parent relation, by ceil(log2 N) squarings."""
    b, n = parents.shape
    eye = torch.eye(n, device=parents.device).expand(b, n, n)
    step = torch.zeros((b, n, n + 1), device=parents.device)
    step.scatter_(2, torch.where(parents >= 0, parents, n).unsqueeze(2), 1.0)
    reach = (eye + step[..., :n]).clamp(max=1.0)
    for _ in range(max(1, (n - 1).bit_length())):
        reach = torch.bmm(reach, reach).clamp(max=1.0)
    return reach.to(torch.uint8)


def reference_tree_mask(ancestors: torch.Tensor, seq_lens: torch.Tensor) -> torch.Tensor:
    """Torch reference: each row's [N, L + N] block, concatenated."""
    _check(ancestors, seq_lens)
    n = ancestors.shape[1]
    parts = []
    for r, length in enumerate(seq_lens.tolist()):
        block = torch.ones((n, length + n), dtype=torch.uint8, device=ancestors.device)
        block[:, length:] = ancestors[r].to(torch.uint8)
        parts.append(block.flatten())
    return torch.cat(parts) if parts else torch.empty(0, dtype=torch.uint8)


@triton.jit
def _tree_mask_kernel(anc_ptr, lens_ptr, offs_ptr, out_ptr, sa_b, sa_q, sa_k, cap,
                      N: tl.constexpr, BLOCK: tl.constexpr, FROM_PARENTS: tl.constexpr):
    """One program per (row, node): the node's mask row, BLOCK cells at a time, never past
    `cap` cells. FROM_PARENTS: `anc_ptr` holds parents [b, N] (stride sa_b), the node's
    ancestors are found by walking up them, and the row's first cell is summed here over the
    rows before it (`offs_ptr` unread)."""
    r = tl.program_id(0)
    q = tl.program_id(1)
    length = tl.load(lens_ptr + r)
    width = length + N
    if FROM_PARENTS:  # the row's first cell: the rows before it, N * (L + N) cells each
        start = length * 0  # int64, as the loop makes it
        for i in range(0, r):
            start += N * (tl.load(lens_ptr + i) + N)
    else:
        start = tl.load(offs_ptr + r)
    base = start + q * width
    cols = tl.arange(0, BLOCK)
    if FROM_PARENTS:
        mine = cols == q
        at = q
        for _ in tl.static_range(N - 1):
            at = tl.load(anc_ptr + r * sa_b + tl.maximum(at, 0), mask=at >= 0, other=-1)
            mine = mine | ((cols == at) & (at >= 0))
    for start in range(0, width, BLOCK):
        c = start + cols
        k = c - length
        tree = (k >= 0) & (k < N)
        if FROM_PARENTS:
            anc = tl.sum(tl.where(mine[None, :] & (cols[None, :] == k[:, None]), 1, 0), axis=1)
        else:
            anc = tl.load(anc_ptr + r * sa_b + q * sa_q + k * sa_k, mask=tree, other=1)
        tl.store(out_ptr + base + c, tl.where(tree, anc, 1).to(tl.uint8),
                 mask=(c < width) & (base + c < cap))


def triton_tree_mask(ancestors: torch.Tensor, seq_lens: torch.Tensor,
                     out: torch.Tensor | None = None, checked: bool = True) -> torch.Tensor:
    """The Triton path (CUDA, or CPU under TRITON_INTERPRET=1), into `out` if given (SGLang's
    static mask buffer under CUDA graphs; at least `mask_size` cells). `checked` False skips
    that check, a host sync, for a caller that knows `out` is large enough (the kernel still
    never writes past it)."""
    _check(ancestors, seq_lens)
    b, n = ancestors.shape[0], ancestors.shape[1]
    if out is None:
        out = torch.empty(mask_size(seq_lens, n), dtype=torch.uint8, device=ancestors.device)
    elif out.dtype != torch.uint8 or out.dim() != 1:
        raise ValueError(f"out: expected a flat uint8 buffer, got {out.dtype} {tuple(out.shape)}")
    elif checked and out.numel() < (need := mask_size(seq_lens, n)):
        raise ValueError(f"out: expected at least {need} cells, got {out.numel()}")
    anc = ancestors.to(torch.uint8)
    if b:
        _tree_mask_kernel[(b, n)](anc, seq_lens, mask_offsets(seq_lens, n), out, *anc.stride(),
                                  out.numel(), N=n, FROM_PARENTS=False,
                                  BLOCK=max(16, min(1024, triton.next_power_of_2(n))))
    return out


def triton_tree_mask_of_parents(parents: torch.Tensor, seq_lens: torch.Tensor,
                                out: torch.Tensor, cap: int | None = None) -> torch.Tensor:
    """The mask straight from the trees' parents [b, N] int64 (-1 the root), into `out`, with
    no host sync (no size check: the kernel never writes past `out`): the step's form on the
    GPU, one launch."""
    b, n = parents.shape
    par = parents.contiguous()
    if b:
        _tree_mask_kernel[(b, n)](par, seq_lens, seq_lens, out, par.stride(0),
                                  0, 0, out.numel() if cap is None else cap, N=n,
                                  BLOCK=max(16, min(1024, triton.next_power_of_2(n))),
                                  FROM_PARENTS=True)
    return out


def tree_mask_of_parents(parents: torch.Tensor, seq_lens: torch.Tensor,
                         out: torch.Tensor | None = None) -> torch.Tensor:
    """The flattened mask of the trees' parents [b, N] (-1 the root), into `out` if given: on
    CUDA the one-launch kernel (no host sync with `out`; without it, a buffer of the exact size,
    a sync), elsewhere the torch reference over `ancestors_of(parents)`."""
    if parents.is_cuda:
        if out is None:
            out = torch.empty(mask_size(seq_lens, parents.shape[1]), dtype=torch.uint8,
                              device=parents.device)
        return triton_tree_mask_of_parents(parents, seq_lens, out)
    mask = reference_tree_mask(ancestors_of(parents), seq_lens)
    if out is None:
        return mask
    out[: mask.numel()] = mask
    return out


def tree_mask(ancestors: torch.Tensor, seq_lens: torch.Tensor,
              out: torch.Tensor | None = None, checked: bool = True) -> torch.Tensor:
    """The flattened mask; Triton on CUDA, the torch reference elsewhere."""
    if ancestors.is_cuda:
        return triton_tree_mask(ancestors, seq_lens, out, checked)
    mask = reference_tree_mask(ancestors, seq_lens)
    if out is None:
        return mask
    out[: mask.numel()] = mask
    return out
