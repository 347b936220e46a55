"""The DFlash drafter's block, a proposer: from the drafter's logits for a batch to each row's
block, its probabilities and the drafter's next guesses, on the host in one copy.

The drafter itself (a few layers over the target's hidden states, docs/dflash.md) runs inside
each engine, over that engine's KV layout; what it proposes is read here the same way for every
engine and for the offline replay:

    drafts    its greedy token at each position, within the row's width, cut where its
              cumulative probability falls below `min_confidence` (-1 after)
    expected  its expected accepted drafts: the sum of the cumulative probabilities, within the
              width (the planner's lookup rule weighs it)
    guesses   its k next most likely tokens at every position, with their probabilities (the
              planned swaps of swaps.py read them)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor


@dataclass(slots=True)
class DrafterBlocks:
    """One drafter pass's proposal for each row of a step, on the host ([b] rows, W = the
    batch's widest block - 1 positions, k guesses)."""
    argmax: list[list[int]]             # [b][W] its greedy token everywhere, before any cut
    drafts: list[list[int]]             # [b][W] the drafts a row may verify, -1 after
    expected: list[float]               # [b] expected accepted drafts (0 without probabilities)
    probs: list[list[float]] = field(default_factory=list)  # [b][W] P(each greedy token)
    guesses: list[list[list[int]]] = field(default_factory=list)  # [b][W][k], most likely first
    guess_probs: list[list[list[float]]] = field(default_factory=list)  # [b][W][k]

    def verified(self, row: int) -> int:
        """Drafts row `row` would verify of its own block."""
        return sum(1 for t in self.drafts[row] if t >= 0)


def next_guesses(logits: Tensor, k: int) -> tuple[Tensor, Tensor, Tensor]:
    """Draft logits [b, w, V] -> the probability of each greedy draft [b, w], the k next most
    likely tokens at every position [b, w, k] and their probabilities [b, w, k]. A vocabulary
    smaller than k + 1 gives every other token."""
    top = logits.float().log_softmax(dim=-1).topk(min(k + 1, logits.shape[-1]), dim=-1)
    p = top.values.exp()
    return p[..., 0], top.indices[..., 1:], p[..., 1:]


def propose_drafts(logits: Tensor, widths: list[int], *, min_confidence: float = 0.0,
                   probabilities: bool = False, guesses: int = 0) -> DrafterBlocks:
    """The drafter's logits [b, W, V] for rows that may verify `widths[r]` drafts (0: a row not
    speculating) -> their blocks. `probabilities`: with each draft's probability and the
    expected accepted drafts (the lookup rule and a confidence cut need them); `guesses` = k:
    also the next k guesses at every position (implies probabilities). One host copy."""
    _check_widths(logits, widths)
    argmax = logits.argmax(dim=-1)                                       # [b, W]
    probs, g_tok, g_p = None, None, None
    if guesses:
        probs, g_tok, g_p = next_guesses(logits, guesses)
    elif probabilities or min_confidence > 0:
        top = logits.gather(-1, argmax.unsqueeze(-1)).squeeze(-1).float()
        probs = (top - torch.logsumexp(logits.float(), dim=-1)).exp()
    return blocks_from(argmax, widths, probs, g_tok, g_p, min_confidence=min_confidence)


def blocks_from(argmax: Tensor, widths: list[int], probs: Tensor | None = None,
                guesses: Tensor | None = None, guess_probs: Tensor | None = None, *,
                min_confidence: float = 0.0) -> DrafterBlocks:
    """The drafter's proposal from what an engine computed of its logits: the greedy drafts
    `argmax` [b, W], and optionally each draft's probability `probs` [b, W] and the next guesses
    [b, W, k] with theirs (an engine whose drafter head keeps only its top-k, e.g. inside a
    CUDA graph, calls this directly). One host copy."""
    b, w = argmax.shape
    dev = argmax.device
    limit = torch.tensor(widths, device=dev)
    slots = torch.arange(w, device=dev).unsqueeze(0)
    if probs is None and min_confidence > 0:
        raise ValueError("blocks_from: a confidence cut needs the drafts' probabilities")
    parts = [argmax]
    expected = torch.zeros(b, device=dev)
    if probs is not None:
        reach = probs.cumprod(dim=-1) * (slots < limit.unsqueeze(1))     # P(draft d is accepted)
        expected = reach.sum(dim=-1)
        if min_confidence > 0:  # drafts worth verifying: cumulative probability >= the threshold
            limit = torch.minimum(limit, (reach >= min_confidence).sum(dim=-1))
        parts.append(probs)
    parts += [limit.unsqueeze(1), expected.unsqueeze(1)]
    if guesses is not None:
        parts += [guesses.flatten(1), guess_probs.flatten(1)]
    host = torch.cat([p.to(torch.float64) for p in parts], dim=1).tolist()  # the host sync
    return _unpack(host, w, probs is not None, guesses.shape[-1] if guesses is not None else 0)


def _check_widths(logits: Tensor, widths: list[int]) -> None:
    b, w = logits.shape[0], logits.shape[1]
    if len(widths) != b or any(not 0 <= n <= w for n in widths):
        raise ValueError(f"propose_drafts: widths {widths} for logits of {b} rows and {w} "
                         "positions; expected one width 0..W per row")


def _unpack(host: list[list[float]], w: int, with_probs: bool, k: int) -> DrafterBlocks:
    """`blocks_from`'s packed rows -> DrafterBlocks."""
    out = DrafterBlocks([], [], [])
    for row in host:
        am = [int(t) for t in row[:w]]
        at = w
        if with_probs:
            out.probs.append(row[at : at + w])
            at += w
        limit, expected = int(row[at]), row[at + 1]
        at += 2
        out.argmax.append(am)
        out.drafts.append(am[:limit] + [-1] * (w - limit))
        out.expected.append(expected)
        if k:
            toks, ps = row[at : at + w * k], row[at + w * k : at + 2 * w * k]
            out.guesses.append([[int(t) for t in toks[d * k : (d + 1) * k]] for d in range(w)])
            out.guess_probs.append([ps[d * k : (d + 1) * k] for d in range(w)])
    return out
