"""The SGLang plugin's plan on the device in two launches a step, where its torch references
(`reference_choose`, `reference_append`: the CPU path, and what the kernels are tested against)
take a few dozen small ones, each a host cost on a step that is host-bound at small models:

  choose  per batch row: the prompt lookup over the row's kept tokens (ngram_lookup.source_of),
          the planner's rule between that continuation and the drafter's block (the same
          arithmetic as engine/spec/planner.py `lookup_wins`: lookup_rule.py), the swap in
          place in the verify's block, and the counters, added atomically;
  append  a step's commits onto each row's kept tokens.

  hist [R, C+1] int64 and lengths [R] int64: the kept tokens (history.py), rows [b] the batch's
  history rows; blocks [b, 1+W] the verify's blocks (anchor, drafts), in place; lp [b*W] fp32
  the drafter's log-probability of each draft; flags [b, 2] int32 (may plan, under a grammar);
  counts [3] int64 (rows swapped, grammar rows swapped, history misses).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from turnspec.kernels.lookup_rule import wins, wins_in_kernel
from turnspec.kernels.ngram_lookup import (
    MATCH_CAP,
    NGRAM_MAX,
    NGRAM_MIN,
    reference_ngram_lookup,
    source_of,
)


def reference_choose(hist: torch.Tensor, lengths: torch.Tensor, rows: torch.Tensor,
                     blocks: torch.Tensor, lp: torch.Tensor, flags: torch.Tensor,
                     counts: torch.Tensor, *, below: float, agree: int, match_min: int,
                     tree: tuple[torch.Tensor, torch.Tensor] | None = None) -> None:
    """Torch reference of `choose` (any device), the same steps as tensor ops."""
    bs, width = blocks.shape[0], blocks.shape[1] - 1
    rows = rows.to(torch.int64)
    cont, n, match = reference_ngram_lookup(hist, lengths, rows, width)
    length = lengths[rows]
    anchored = hist[rows, (length - 1).clamp(min=0)] == blocks[:, 0]
    drafts = blocks[:, 1:]
    expected = lp.view(bs, width).exp().cumprod(dim=-1).sum(dim=-1)  # expected accepted drafts
    agrees = (cont[:, :agree] == drafts[:, :agree]).all(dim=-1)
    ok, grammar = flags[:, 0] > 0, flags[:, 1] > 0
    take = wins(n, agrees, width, expected, below, match, match_min) & anchored & ok
    if tree is not None:
        tree[0].copy_(torch.where((anchored & ok).unsqueeze(1), cont, -1))
        tree[1].copy_(ok & ~take)
    drafts.copy_(torch.where(take.unsqueeze(1) & (cont >= 0), cont, drafts))
    counts += torch.stack([take.sum(), (take & grammar).sum(), (ok & (length > 0) & ~anchored).sum()])


# strides and the cap are not specialized on (Triton would on % 16), so the kernels `warm`
# compiles are the ones serving runs, whatever the context length
@triton.jit(do_not_specialize=["hist_stride", "blocks_stride"])
def _choose_kernel(hist_ptr, len_ptr, rows_ptr, blocks_ptr, lp_ptr, flags_ptr, counts_ptr,
                   cont_ptr, branch_ptr, hist_stride, blocks_stride, below,
                   WIDTH: tl.constexpr, WP: tl.constexpr, BLOCK: tl.constexpr,
                   NMIN: tl.constexpr, NMAX: tl.constexpr, CAP: tl.constexpr,
                   AGREE: tl.constexpr, MATCH_MIN: tl.constexpr, TREE: tl.constexpr):
    pid = tl.program_id(0)
    r = tl.load(rows_ptr + pid).to(tl.int64)
    base = hist_ptr + r * hist_stride
    length = tl.load(len_ptr + r)
    end = length - 1
    source, match, has = source_of(base, end, BLOCK, NMIN, NMAX, CAP)
    n = tl.where(has, tl.minimum(end - source, WIDTH), 0)
    w = tl.arange(0, WP)
    live = w < WIDTH
    row = blocks_ptr + pid * blocks_stride
    drafts = tl.load(row + 1 + w, mask=live, other=-1)
    cont = tl.load(base + source + 1 + w, mask=w < n, other=-1)
    p = tl.exp(tl.load(lp_ptr + pid * WIDTH + w, mask=live, other=float("-inf")))
    expected = tl.sum(tl.where(live, tl.cumprod(p, axis=0), 0.0), axis=0)
    agrees = tl.sum(tl.where((w < AGREE) & (cont == drafts), 1, 0), axis=0) == AGREE
    take_lookup = wins_in_kernel(n, agrees, WIDTH, expected, below, match, MATCH_MIN)
    anchored = tl.load(base + tl.maximum(end, 0)) == tl.load(row)
    ok = tl.load(flags_ptr + pid * 2) != 0
    take = (take_lookup & anchored & ok).to(tl.int64)
    grammar = (tl.load(flags_ptr + pid * 2 + 1) != 0).to(tl.int64)
    if TREE:  # the continuation a row passed over may be a branch of its tree (tree_plan.py)
        tl.store(cont_ptr + pid * WIDTH + w, tl.where(anchored & ok, cont, -1), mask=live)
        tl.store(branch_ptr + pid, ok & (take == 0))
    tl.store(row + 1 + w, tl.where(w < n * take, cont, drafts), mask=live)
    tl.atomic_add(counts_ptr, take)
    tl.atomic_add(counts_ptr + 1, take * grammar)
    tl.atomic_add(counts_ptr + 2, (ok & (length > 0) & (anchored == 0)).to(tl.int64))


def triton_choose(hist: torch.Tensor, lengths: torch.Tensor, rows: torch.Tensor,
                  blocks: torch.Tensor, lp: torch.Tensor, flags: torch.Tensor, counts: torch.Tensor,
                  *, below: float, agree: int, match_min: int,
                  tree: tuple[torch.Tensor, torch.Tensor] | None = None) -> None:
    """The Triton path of `choose` (CUDA, or the CPU under TRITON_INTERPRET=1)."""
    b, block = blocks.shape
    width = block - 1
    cont, branch = tree if tree is not None else (blocks, flags)  # unused without a tree
    if b and width:
        _choose_kernel[(b,)](hist, lengths, rows, blocks, lp, flags, counts, cont, branch,
                             hist.stride(0),
                             blocks.stride(0), float(below), WIDTH=width,
                             WP=max(16, triton.next_power_of_2(width)), BLOCK=1024,
                             NMIN=NGRAM_MIN, NMAX=NGRAM_MAX, CAP=MATCH_CAP, AGREE=agree,
                             MATCH_MIN=match_min, TREE=tree is not None)


def choose(hist: torch.Tensor, lengths: torch.Tensor, rows: torch.Tensor, blocks: torch.Tensor,
           lp: torch.Tensor, flags: torch.Tensor, counts: torch.Tensor, *, below: float,
           agree: int, match_min: int,
           tree: tuple[torch.Tensor, torch.Tensor] | None = None) -> None:
    """Swap each batch row's block for its lookup continuation where the rule says so (module
    doc); `agree`, `match_min`: planner.py's LOOKUP_AGREE and LOOKUP_MATCH. With `tree` (cont
    [b, W] int64, branch [b] bool), for verify trees, every cell of both is written: each row's
    continuation (-1 past it, and everywhere on a row that may not plan or whose kept tokens
    miss the anchor) and whether the row branches (it may plan, and the rule did not take the
    continuation: a row that takes it verifies it as a chain). Triton on CUDA, the torch
    reference elsewhere."""
    b, block = blocks.shape
    if lp.shape != (b * (block - 1),) or flags.shape != (b, 2) or rows.shape != (b,):
        raise ValueError(f"lp/flags/rows: expected [{b * (block - 1)}], [{b}, 2], [{b}] for "
                         f"blocks {tuple(blocks.shape)}, got {tuple(lp.shape)}, "
                         f"{tuple(flags.shape)}, {tuple(rows.shape)}")
    if tree is not None and (tree[0].shape != (b, block - 1) or tree[1].shape != (b,)):
        raise ValueError(f"tree: expected cont [{b}, {block - 1}] and branch [{b}], got "
                         f"{tuple(tree[0].shape)}, {tuple(tree[1].shape)}")
    impl = triton_choose if blocks.is_cuda else reference_choose
    impl(hist, lengths, rows, blocks, lp, flags, counts, below=below, agree=agree,
         match_min=match_min, tree=tree)


@triton.jit(do_not_specialize=["hist_stride", "cap"])
def _append_kernel(hist_ptr, len_ptr, rows_ptr, tok_ptr, counts_ptr, hist_stride, cap,
                   STRIDE: tl.constexpr, SP: tl.constexpr, HAS_COUNTS: tl.constexpr):
    pid = tl.program_id(0)
    r = tl.load(rows_ptr + pid).to(tl.int64)
    start = tl.load(len_ptr + r)
    d = tl.arange(0, SP)
    live = d < STRIDE
    tok = tl.load(tok_ptr + pid * STRIDE + d, mask=live, other=0)
    tl.store(hist_ptr + r * hist_stride + tl.minimum(start + d, cap), tok.to(tl.int64), mask=live)
    if HAS_COUNTS:  # noqa: SIM108 (a constexpr branch: only one is compiled)
        added = tl.load(counts_ptr + pid).to(tl.int64)
    else:
        added = tl.full((), 1, tl.int64)
    tl.store(len_ptr + r, tl.minimum(start + added, cap))


def reference_append(hist: torch.Tensor, lengths: torch.Tensor, rows: torch.Tensor,
                     tokens: torch.Tensor, counts: torch.Tensor | None, stride: int) -> None:
    """Torch reference of `append` (any device)."""
    bs, cap = int(rows.shape[0]), hist.shape[1] - 1
    rows = rows.to(torch.int64)
    start = lengths[rows].unsqueeze(1)
    pos = (start + torch.arange(stride, device=rows.device)).clamp(max=cap)
    hist[rows.unsqueeze(1).expand(bs, stride), pos] = tokens.view(bs, stride).to(torch.int64)
    added = counts.to(torch.int64) if counts is not None else 1
    lengths[rows] = (start.squeeze(1) + added).clamp(max=cap)


def triton_append(hist: torch.Tensor, lengths: torch.Tensor, rows: torch.Tensor,
                  tokens: torch.Tensor, counts: torch.Tensor | None, stride: int) -> None:
    """The Triton path of `append` (CUDA, or the CPU under TRITON_INTERPRET=1)."""
    _append_kernel[(rows.shape[0],)](hist, lengths, rows, tokens,
                                     counts if counts is not None else rows, hist.stride(0),
                                     hist.shape[1] - 1, STRIDE=stride,
                                     SP=max(16, triton.next_power_of_2(stride)),
                                     HAS_COUNTS=counts is not None)


def append(hist: torch.Tensor, lengths: torch.Tensor, rows: torch.Tensor, tokens: torch.Tensor,
           counts: torch.Tensor | None, stride: int) -> None:
    """Batch row i (history row rows[i]) committed tokens[i * stride : i * stride + counts[i]]
    (counts None: one token a row): onto its kept tokens, past the last; a full row's go to
    its last column (never read). Triton on CUDA, the torch reference elsewhere."""
    if rows.shape[0]:
        (triton_append if hist.is_cuda else reference_append)(hist, lengths, rows, tokens,
                                                              counts, stride)


def warm(width: int, device: torch.device | str, *, agree: int, match_min: int,
         tree: bool = False) -> None:
    """Compile both kernels for blocks of `width` drafts (`agree`, `match_min` as `choose`
    gets them; `tree`: its verify-tree form) and the appends serving makes (a prefill's one
    token a row, int64 or int32; a step's width + 1 with counts), on tiny inputs, so no request
    waits on a compile."""
    hist = torch.zeros((1, 9), dtype=torch.int64, device=device)
    lengths = torch.zeros(1, dtype=torch.int64, device=device)
    rows = torch.zeros(1, dtype=torch.int64, device=device)
    blocks = torch.zeros((1, width + 1), dtype=torch.int64, device=device)
    lp = torch.zeros(width, dtype=torch.float32, device=device)
    flags = torch.zeros((1, 2), dtype=torch.int32, device=device)
    side = (torch.zeros((1, width), dtype=torch.int64, device=device),
            torch.zeros(1, dtype=torch.bool, device=device)) if tree else None
    choose(hist, lengths, rows, blocks, lp, flags, torch.zeros(3, dtype=torch.int64, device=device),
           below=0.0, agree=agree, match_min=match_min, tree=side)
    counts = torch.ones(1, dtype=torch.int32, device=device)
    for dtype in (torch.int64, torch.int32):
        append(hist, lengths, rows, torch.zeros(1, dtype=dtype, device=device), None, 1)
    append(hist, lengths, rows, torch.zeros(width + 1, dtype=torch.int64, device=device), counts,
           width + 1)
