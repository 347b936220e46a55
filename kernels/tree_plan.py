"""Each row's verify tree on the device, for DFLASH's verify of N = 1 + W nodes (the anchor and
W drafts' worth): the N - 1 most likely nodes of the row's candidate family, the same tree
engine/spec/tree.py `best_first(anchor, *family(...), N)` builds on the host, without the host.

The family (tree.py `family`): the drafter's block, each single swap of one draft for one of its
next guesses (followed by the drafter's own drafts), and the prompt-lookup continuation where it
leaves the block. They part once and never meet, so every candidate node has a fixed place:

  chain   k = 0..W-1           the draft at depth k + 1
  swap    (j, g, k), k >= j    guess g at depth j + 1, then the drafts after it, to depth k + 1
  lookup  k = m..W-1           the continuation from where it leaves the block (m), to depth k + 1

A node's value is the sum of its path's log-probabilities (float64, so that a child, whose value
never exceeds its parent's, ranks below it: depth breaks ties). The N - 1 best nodes are a tree;
sorted by depth they are in topological order.

  blocks  [b, 1 + W] int64   anchor, drafter's drafts
  guesses [b, W, G]  int64   the drafter's next guesses at each position, most likely first
  lp      [b, W, 1 + G] fp32 log-probabilities of the draft and of each guess
  cont    [b, W]     int64   the lookup continuation, -1 past its end
  unranked [b]       fp32    log-probability of a lookup token the drafter does not rank
  ok      [b]        bool    the row may branch (else its tree is the drafter's chain)
  ->  tokens, parents, depths [b, N] int64 (node 0 the anchor, parent -1)
"""

from __future__ import annotations

from functools import cache

import torch

TIE = 1e-9  # per depth: a child never ties its parent (values are float64)


@cache
def _layout(width: int, guesses: int, device: str) -> tuple[torch.Tensor, ...]:
    """The swap candidates' fixed places: j, g, k and the parent's candidate index (the anchor
    is candidate index C, one past the last)."""
    js, gs, ks, parents = [], [], [], []
    total = width + guesses * width * (width + 1) // 2 + width
    for g in range(guesses):
        for j in range(width):
            for k in range(j, width):
                here = width + len(js)
                parents.append((j - 1 if j else total) if k == j else here - 1)
                js.append(j)
                gs.append(g)
                ks.append(k)
    as_t = [torch.tensor(x, dtype=torch.int64, device=device) for x in (js, gs, ks, parents)]
    return (*as_t, torch.tensor(total))


def reference_tree_plan(blocks: torch.Tensor, guesses: torch.Tensor, lp: torch.Tensor,
                        cont: torch.Tensor, unranked: torch.Tensor,
                        ok: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Torch reference (any device): every candidate's value, the top N - 1, sorted by depth."""
    b, n = blocks.shape
    w, g = n - 1, guesses.shape[2]
    dev = blocks.device
    js, gs, ks, sparent, total = _layout(w, g, str(dev))
    c_total = int(total)
    drafts, lp = blocks[:, 1:], lp.double()
    pos = torch.arange(w, device=dev)
    cum = lp[..., 0].cumsum(1)                                         # S[k]: chain to depth k+1
    before = cum - lp[..., 0]                                          # S[k-1]
    # chain
    c_tok, c_val, c_dep = drafts, cum, (pos + 1).expand(b, w)
    c_par = torch.where(pos == 0, c_total, pos - 1).expand(b, w)
    # lookup: where it leaves the block, and each token's log-probability
    live = cont >= 0
    leaves = live & (cont != drafts)
    has = leaves.any(1) & ok
    m = torch.where(leaves, pos, w).min(1).values                      # [b], w if it never leaves
    ranked = torch.where(cont == drafts, lp[..., 0], unranked.double().unsqueeze(1))
    for gi in range(g):
        ranked = torch.where((cont != drafts) & (cont == guesses[..., gi]), lp[..., 1 + gi], ranked)
    lcum = ranked.cumsum(1)
    start = before.gather(1, m.clamp(max=w - 1).unsqueeze(1))          # S[m-1]
    lbase = lcum.gather(1, m.clamp(max=w - 1).unsqueeze(1)) - ranked.gather(1, m.clamp(max=w - 1).unsqueeze(1))
    run = live.int().cumprod(1).bool()                                 # before the first -1
    l_ok = has.unsqueeze(1) & (pos >= m.unsqueeze(1)) & run
    l_val = torch.where(l_ok, start + lcum - lbase, float("-inf"))
    l_tok = cont
    l_idx = w + g * w * (w + 1) // 2 + pos
    l_par = torch.where(pos == m.unsqueeze(1), torch.where(pos == 0, c_total, pos - 1), l_idx - 1)
    # swaps
    gj = guesses[:, js, gs]                                             # [b, S] the guess at j
    s_tok = torch.where(ks == js, gj, drafts[:, ks])
    s_val = before[:, js] + lp[:, js, 1 + gs] + cum[:, ks] - cum[:, js]
    dup = (gj == drafts[:, js]) | (has.unsqueeze(1) & (m.unsqueeze(1) == js) & (gj == cont[:, js]))
    s_val = torch.where(ok.unsqueeze(1) & ~dup, s_val, float("-inf"))
    tok = torch.cat([c_tok, s_tok, l_tok], 1)
    val = torch.cat([c_val, s_val, l_val], 1)
    dep = torch.cat([c_dep, (ks + 1).expand(b, -1), (pos + 1).expand(b, w)], 1)
    par = torch.cat([c_par, sparent.expand(b, -1), l_par.expand(b, w)], 1)
    key = val - TIE * dep
    chosen = key.topk(w, dim=1).indices                                # [b, N-1]
    order = dep.gather(1, chosen).sort(dim=1, stable=True).indices
    chosen = chosen.gather(1, order)
    new = torch.zeros((b, c_total + 1), dtype=torch.int64, device=dev)
    new.scatter_(1, chosen, torch.arange(1, n, device=dev).expand(b, w))
    tokens = torch.cat([blocks[:, :1], tok.gather(1, chosen)], 1)
    parents = torch.cat([torch.full((b, 1), -1, dtype=torch.int64, device=dev),
                         new.gather(1, par.gather(1, chosen))], 1)
    depths = torch.cat([torch.zeros((b, 1), dtype=torch.int64, device=dev), dep.gather(1, chosen)], 1)
    return tokens, parents, depths
