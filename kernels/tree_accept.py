"""Greedy accept over token trees (engine/spec/tree.py `accepted_path`, on the device): from each
row's anchor, move to the child holding the target's choice after the current node, until no
child does.

  tokens  : [b, N] int64, node i's token (node 0 the anchor)
  parents : [b, N] int64, node i's parent (-1 for the anchor; parents come before children)
  target  : [b, N] int64, the target's choice after node i (its argmax there)
  path    : [b, N] int64, the accepted nodes from the anchor, then -1
  length  : [b] int64, accepted drafts (the path's nodes after the anchor)

The row commits tokens[path[1..length]] and then target[path[length]] (the bonus). Siblings are
scanned in node order, so a repeated sibling token resolves to the first, as the host walk does.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


def _check(tokens: torch.Tensor, parents: torch.Tensor, target: torch.Tensor) -> None:
    if tokens.dim() != 2 or parents.shape != tokens.shape or target.shape != tokens.shape:
        raise ValueError(f"tokens/parents/target: expected one [b, N] shape, got "
                         f"{tuple(tokens.shape)}, {tuple(parents.shape)}, {tuple(target.shape)}")
    if not all(t.dtype == torch.int64 for t in (tokens, parents, target)):
        raise ValueError(f"tokens/parents/target: expected int64, got {tokens.dtype}, "
                         f"{parents.dtype}, {target.dtype}")
    if not tokens.device == parents.device == target.device:
        raise ValueError("tokens/parents/target: expected one device")


def reference_tree_accept(tokens: torch.Tensor, parents: torch.Tensor,
                          target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Torch reference: the walk row by row on the host."""
    _check(tokens, parents, target)
    b, n = tokens.shape
    path = torch.full((b, n), -1, dtype=torch.int64)
    length = torch.zeros(b, dtype=torch.int64)
    toks, pars, tgt = tokens.tolist(), parents.tolist(), target.tolist()
    for r in range(b):
        at, walked = 0, [0]
        while True:
            nxt = next((c for c in range(1, n) if pars[r][c] == at and toks[r][c] == tgt[r][at]),
                       None)
            if nxt is None:
                break
            walked.append(nxt)
            at = nxt
        path[r, : len(walked)] = torch.tensor(walked)
        length[r] = len(walked) - 1
    return path.to(tokens.device), length.to(tokens.device)


@triton.jit
def _child(tgt_ptr, row, at, idx, live, pars, toks, N: tl.constexpr, BLOCK: tl.constexpr):
    """The first child of node `at` holding the target's choice after it, and whether one does
    (the walk's step, shared by both kernels)."""
    want = tl.load(tgt_ptr + row * N + tl.maximum(at, 0))
    hit = live & (idx > 0) & (pars == at) & (toks == want)
    nxt = tl.min(tl.where(hit, idx, BLOCK), axis=0)
    return nxt, nxt < BLOCK


@triton.jit
def _tree_accept_kernel(tok_ptr, par_ptr, tgt_ptr, path_ptr, len_ptr,
                        N: tl.constexpr, BLOCK: tl.constexpr):
    """One program per row: the tree fits one block of lanes; each step finds the first child
    of the current node holding the target's choice there."""
    row = tl.program_id(0)
    idx = tl.arange(0, BLOCK)
    live = idx < N
    toks = tl.load(tok_ptr + row * N + idx, mask=live, other=-1)
    pars = tl.load(par_ptr + row * N + idx, mask=live, other=-2)
    tl.store(path_ptr + row * N + idx, tl.where(idx == 0, 0, -1).to(tl.int64), mask=live)
    at = 0
    depth = 0
    for _ in range(N - 1):
        nxt, found = _child(tgt_ptr, row, at, idx, live, pars, toks, N, BLOCK)
        depth = tl.where(found, depth + 1, depth)
        tl.store(path_ptr + row * N + depth, nxt.to(tl.int64), mask=found)
        at = tl.where(found, nxt, -3)  # once lost, no node has parent -3: the walk stays stopped
    tl.store(len_ptr + row, depth.to(tl.int64))


def triton_tree_accept(tokens: torch.Tensor, parents: torch.Tensor,
                       target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The Triton path (CUDA, or CPU under TRITON_INTERPRET=1)."""
    _check(tokens, parents, target)
    b, n = tokens.shape
    path = torch.empty((b, n), dtype=torch.int64, device=tokens.device)
    length = torch.empty(b, dtype=torch.int64, device=tokens.device)
    if b and n:
        _tree_accept_kernel[(b,)](tokens.contiguous(), parents.contiguous(), target.contiguous(),
                                  path, length, N=n, BLOCK=max(16, triton.next_power_of_2(n)))
    return path, length


def tree_accept(tokens: torch.Tensor, parents: torch.Tensor,
                target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(path [b, N], length [b]); Triton on CUDA, the torch reference elsewhere."""
    if tokens.is_cuda:
        return triton_tree_accept(tokens, parents, target)
    return reference_tree_accept(tokens, parents, target)


def linearized(path: torch.Tensor, length: torch.Tensor, tokens: torch.Tensor,
               target: torch.Tensor, vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A verified tree as the linear block a chain verifier would have accepted it from, on the
    device: `order` [b, N] (each row's accepted path first, then its other nodes in node order)
    permutes the verify's per-node outputs (logits, hidden states) into path order, and `block`
    [b, N] is what a linear accept then reads: the anchor, the path's tokens, then a token the
    target did not choose after the path's end, so exactly `length` drafts are accepted and the
    bonus is the target's choice there. path/length: kernels/tree_accept.py's; tokens/target
    [b, N] int64 as there."""
    b, n = tokens.shape
    nodes = torch.arange(n, device=tokens.device).expand(b, n)
    key = torch.cat([n + nodes, torch.zeros((b, 1), dtype=nodes.dtype, device=nodes.device)], 1)
    where = torch.where(path >= 0, path, n)            # padding goes to a spare column
    key.scatter_(1, where, nodes.clone())              # a path node's key: its place on the path
    order = key[:, :n].argsort(dim=1)
    block = tokens.gather(1, order)
    end = path.gather(1, length.unsqueeze(1))          # [b, 1] the path's last node
    stop = (target.gather(1, end) + 1) % vocab         # [b, 1] not the target's choice there
    block = torch.where(nodes == length.unsqueeze(1) + 1, stop, block)
    return order, block


def reference_tree_settle(tokens: torch.Tensor, parents: torch.Tensor, target: torch.Tensor,
                          drafted: torch.Tensor, branching: torch.Tensor, counts: torch.Tensor,
                          vocab: int) -> torch.Tensor:
    """Torch reference of `tree_settle` (any device)."""
    b, n = tokens.shape
    path, length = reference_tree_accept(tokens, parents, target)
    path, length = path.to(tokens.device), length.to(tokens.device)
    order, block = linearized(path, length, tokens, target, vocab)
    ident = torch.arange(n, device=tokens.device).expand(b, n)
    order = torch.where(branching.unsqueeze(1), order, ident)
    left = (block[:, 1:] != drafted) & (ident[:, 1:] <= length.unsqueeze(1))
    counts += (left.any(1) & branching).sum()
    tokens.copy_(torch.where(branching.unsqueeze(1), block, tokens))
    return (order + torch.arange(b, device=tokens.device).unsqueeze(1) * n).reshape(-1)


@triton.jit
def _tree_settle_kernel(tok_ptr, par_ptr, tgt_ptr, draft_ptr, branch_ptr, flat_ptr, count_ptr,
                        vocab, N: tl.constexpr, BLOCK: tl.constexpr):
    """One program per row: the accept walk, then each node's place in path order (the path
    first, the other nodes after it in node order), the block rewritten in that order with a
    token the target did not choose after the path's end, and whether the path left the
    drafter's own block."""
    row = tl.program_id(0)
    idx = tl.arange(0, BLOCK)
    live = idx < N
    toks = tl.load(tok_ptr + row * N + idx, mask=live, other=-1)
    pars = tl.load(par_ptr + row * N + idx, mask=live, other=-2)
    inpath = idx == 0
    pos = tl.where(idx == 0, 0, -1)
    at = 0
    end = 0
    depth = 0
    for _ in range(N - 1):
        nxt, found = _child(tgt_ptr, row, at, idx, live, pars, toks, N, BLOCK)
        depth = tl.where(found, depth + 1, depth)
        step = (idx == nxt) & found
        inpath = inpath | step
        pos = tl.where(step, depth, pos)
        end = tl.where(found, nxt, end)
        at = tl.where(found, nxt, -3)
    inpath = inpath != 0
    rest = live & (inpath == 0)
    pos = tl.where(inpath, pos, depth + tl.cumsum(rest.to(tl.int32), axis=0))
    stop = (tl.load(tgt_ptr + row * N + end) + 1) % vocab
    block = tl.where(pos == depth + 1, stop, toks)
    drafts = tl.load(draft_ptr + row * (N - 1) + pos - 1, mask=inpath & (pos >= 1), other=-1)
    left = tl.sum((inpath & (pos >= 1) & (toks != drafts)).to(tl.int32), axis=0) > 0
    branch = tl.load(branch_ptr + row + idx * 0, mask=live, other=0) != 0  # the row's, per lane
    tl.store(tok_ptr + row * N + pos, block, mask=live & branch)
    tl.store(flat_ptr + row * N + tl.where(branch, pos, idx), row * N + idx, mask=live)
    tl.atomic_add(count_ptr, (left & (tl.max(branch.to(tl.int32), axis=0) > 0)).to(tl.int64))


def triton_tree_settle(tokens: torch.Tensor, parents: torch.Tensor, target: torch.Tensor,
                       drafted: torch.Tensor, branching: torch.Tensor, counts: torch.Tensor,
                       vocab: int) -> torch.Tensor:
    """The Triton path (CUDA, or the CPU under TRITON_INTERPRET=1)."""
    b, n = tokens.shape
    flat = torch.empty(b * n, dtype=torch.int64, device=tokens.device)
    if b:
        _tree_settle_kernel[(b,)](tokens, parents.contiguous(), target.contiguous(),
                                  drafted.contiguous(), branching.contiguous(), flat, counts,
                                  vocab, N=n, BLOCK=max(16, triton.next_power_of_2(n)))
    return flat


def tree_settle(tokens: torch.Tensor, parents: torch.Tensor, target: torch.Tensor,
                drafted: torch.Tensor, branching: torch.Tensor, counts: torch.Tensor,
                vocab: int) -> torch.Tensor:
    """A verified step of trees in path order, for a linear accept (`linearized`, per row): rewrites each branching row of `tokens` [b, N] (contiguous, in
    place) to its linear block, adds to `counts` [1] the branching rows whose accepted path is
    not the drafter's own `drafted` [b, N-1], and returns the flat gather index [b * N] that
    puts the verify's per-node rows (logits, hidden states, KV slots) in that order (the
    identity for a row that does not branch). Triton on CUDA, the torch reference elsewhere."""
    _check(tokens, parents, target)
    impl = triton_tree_settle if tokens.is_cuda else reference_tree_settle
    return impl(tokens, parents, target, drafted, branching, counts, vocab)
