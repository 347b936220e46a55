"""Prompt lookup on the device (engine/spec/proposers/lookup.py `ngram_lookup`, with its default
sizes): for each row, the continuation of the latest earlier occurrence of the longest matching
suffix of its tokens (4 down to 2 tokens), and how many of its last tokens that source matches
(up to 16). On the device so that a decode step never waits for the host to read the newest
tokens (the SGLang plugin keeps each request's tokens on the GPU: sglang_plugin/history.py):
`source_of`, one row's search, which the plan kernel runs per row (plan_lookup.py), and the
batch's torch reference `reference_ngram_lookup`:

  hist    : [R, C] int64, each history row's tokens (a row per request slot)
  lengths : [R] int64, tokens in each row (the last is the anchor: the last committed token)
  rows    : [b] int64, the history row of each batch row
  width   : drafts a row may take
  ->
  cont    : [b, width] int64, the continuation, then -1
  n       : [b] int64, its length (0: none)
  match   : [b] int64, the source's match with the last tokens (0: none)
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

NGRAM_MIN, NGRAM_MAX, MATCH_CAP = 2, 4, 16  # lookup.py's defaults: ngram_lookup(tokens, width)
_BIG = 1 << 40  # score = n * _BIG + j: the longest suffix match first, then the latest position


def _check(hist: torch.Tensor, lengths: torch.Tensor, rows: torch.Tensor, width: int) -> None:
    if hist.dim() != 2 or lengths.shape != (hist.shape[0],) or rows.dim() != 1:
        raise ValueError(f"hist/lengths/rows: expected [R, C], [R], [b], got {tuple(hist.shape)}, "
                         f"{tuple(lengths.shape)}, {tuple(rows.shape)}")
    if not all(t.dtype == torch.int64 for t in (hist, lengths, rows)):
        raise ValueError(f"hist/lengths/rows: expected int64, got {hist.dtype}, {lengths.dtype}, "
                         f"{rows.dtype}")
    if width < 1:
        raise ValueError(f"width: expected >= 1, got {width}")


def reference_ngram_lookup(hist: torch.Tensor, lengths: torch.Tensor, rows: torch.Tensor,
                           width: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Torch reference, vectorized over rows and positions (any device)."""
    _check(hist, lengths, rows, width)
    h, length = hist[rows], lengths[rows]                                # [b, C], [b]
    b, c = h.shape
    end = (length - 1).unsqueeze(1)                                      # the anchor's position
    j = torch.arange(c, device=h.device).expand(b, c)
    run = (j >= NGRAM_MIN - 1) & (j <= end - 1)                          # candidate sources
    n = torch.zeros((b, c), dtype=torch.int64, device=h.device)
    for k in range(NGRAM_MAX):  # n[j]: how many tokens up to j match the last ones
        same = h.gather(1, (j - k).clamp(min=0)) == h.gather(1, (end - k).clamp(min=0))
        run = run & (j - k >= 0) & same
        n += run
    best = torch.where(n > 0, n * _BIG + j, -1).max(dim=1).values
    found = (best // _BIG >= NGRAM_MIN)
    src = torch.where(found, best % _BIG, 0).unsqueeze(1)
    k = torch.arange(MATCH_CAP, device=h.device).unsqueeze(0)
    same = (h.gather(1, (src - k).clamp(min=0)) == h.gather(1, (end - k).clamp(min=0))) & (src - k >= 0)
    match = torch.where(found, same.long().cumprod(dim=1).sum(dim=1), 0)
    count = torch.where(found, torch.clamp(end.squeeze(1) - src.squeeze(1), max=width), 0)
    w = torch.arange(width, device=h.device).unsqueeze(0)
    taken = h.gather(1, (src + 1 + w).clamp(max=c - 1))
    cont = torch.where(w < count.unsqueeze(1), taken, -1)
    return cont, count, match


@triton.jit
def source_of(base, end, BLOCK: tl.constexpr, NMIN: tl.constexpr, NMAX: tl.constexpr,
              CAP: tl.constexpr):
    """One row's lookup (tokens at `base`, the anchor at `end`): (source, match, found), where
    the continuation starts at source + 1. A pass over the tokens in blocks keeps the best
    score, n * _BIG + j: the longest suffix match, then the latest position."""
    best = tl.full((), -1, tl.int64)
    for start in range(0, end, BLOCK):
        j = start + tl.arange(0, BLOCK)
        run = (j >= NMIN - 1) & (j <= end - 1)
        n = tl.zeros((BLOCK,), tl.int64)
        for k in tl.static_range(NMAX):
            run = run & (j - k >= 0)
            last = tl.load(base + end - k, mask=end - k >= 0, other=-2)
            run = run & (tl.load(base + j - k, mask=run, other=-1) == last)
            n += run.to(tl.int64)
        score = tl.where(n > 0, n * (1 << 40) + j, -1)  # (1 << 40): _BIG
        best = tl.maximum(best, tl.max(score, axis=0))
    k = tl.arange(0, CAP)
    best_k = best + tl.zeros((CAP,), tl.int64)  # vectors from here: the interpreter refuses
    found = best_k // (1 << 40) >= NMIN          # a scalar mask combined with a vector one
    src = tl.where(found, best_k % (1 << 40), 0)
    ok = found & (src - k >= 0) & (end - k >= 0)
    same = ok & (tl.load(base + src - k, mask=ok, other=-1) == tl.load(base + end - k, mask=ok, other=-2))
    match = tl.min(tl.where(same, CAP, k), axis=0)  # the leading run of matches
    has = tl.max(found.to(tl.int64), axis=0) > 0
    return tl.max(src, axis=0), tl.where(has, match, 0).to(tl.int64), has
