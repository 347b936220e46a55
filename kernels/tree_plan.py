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
import triton
import triton.language as tl

TIE = 1e-9  # per depth: a child never ties its parent (values are float64)


@cache
def _layout(width: int, guesses: int,
            device: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """The swap candidates' fixed places: j, g, k and the parent's candidate index, then C, the
    count of all candidates (the anchor's candidate index, one past the last)."""
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
    return (*as_t, total)


def reference_tree_plan(blocks: torch.Tensor, guesses: torch.Tensor, lp: torch.Tensor,
                        cont: torch.Tensor, unranked: torch.Tensor,
                        ok: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Torch reference (any device): every candidate's value, the top N - 1, sorted by depth."""
    b, n = blocks.shape
    w, g = n - 1, guesses.shape[2]
    dev = blocks.device
    js, gs, ks, sparent, c_total = _layout(w, g, str(dev))
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


@cache
def _lanes(width: int, guesses: int, device: str) -> torch.Tensor:
    """Every candidate's (kind, j, g, k, parent candidate) as [5, C] int32, in the reference's
    order: the chain, the swaps by (g, j, k), the lookup (its parents depend on where it leaves
    the block: the kernel sets the first's)."""
    js, gs, ks, sparent, t = _layout(width, guesses, "cpu")
    w = width
    pos = list(range(w))
    kind = [0] * w + [1] * len(js) + [2] * w
    j = pos + js.tolist() + pos
    g = [0] * w + gs.tolist() + [0] * w
    k = pos + ks.tolist() + pos
    par = [p - 1 if p else t for p in pos] + sparent.tolist() + [t - w + p - 1 for p in pos]
    lanes = torch.tensor([kind, j, g, k, par], dtype=torch.int32)
    if torch.device(device).type == "cuda":  # pinned: the copy does not wait for the stream
        return lanes.pin_memory().to(device, non_blocking=True)
    return lanes.to(device)


@triton.jit
def _tree_plan_kernel(blocks_ptr, guess_ptr, gs_row, gs_pos, lp_ptr, cont_ptr, unr_ptr, ok_ptr,
                      lanes_ptr, tok_ptr, par_ptr, dep_ptr, C, TIE: tl.constexpr,
                      W: tl.constexpr, G: tl.constexpr, CP: tl.constexpr, NP: tl.constexpr):
    """One program per row: every candidate's value in a lane, the W best picked one by one,
    then numbered by depth (ties in pick order) and their parents renumbered."""
    row = tl.program_id(0)
    c = tl.arange(0, CP)
    live = c < C
    kind = tl.load(lanes_ptr + c, mask=live, other=0)
    j = tl.load(lanes_ptr + C + c, mask=live, other=0)
    g = tl.load(lanes_ptr + 2 * C + c, mask=live, other=0)
    k = tl.load(lanes_ptr + 3 * C + c, mask=live, other=0)
    par = tl.load(lanes_ptr + 4 * C + c, mask=live, other=0)
    ok = tl.load(ok_ptr + row) != 0
    unr = tl.load(unr_ptr + row).to(tl.float64)
    base = row * (W + 1)
    # where the lookup leaves the block (m = W: never), and whether it runs unbroken to each k
    m = W
    for i in tl.static_range(W):
        ci = tl.load(cont_ptr + row * W + i)
        di = tl.load(blocks_ptr + base + 1 + i)
        m = tl.where((m == W) & (ci >= 0) & (ci != di), i, m)
    has = (m < W) & ok
    value = tl.zeros([CP], dtype=tl.float64)
    run = tl.full([CP], 1, tl.int1)
    for i in tl.static_range(W):
        di = tl.load(blocks_ptr + base + 1 + i)
        ci = tl.load(cont_ptr + row * W + i)
        l0 = tl.load(lp_ptr + (row * W + i) * (G + 1)).to(tl.float64)
        ranked = tl.where(ci == di, l0, unr)
        for q in tl.static_range(G):
            gq = tl.load(guess_ptr + row * gs_row + i * gs_pos + q)
            lq = tl.load(lp_ptr + (row * W + i) * (G + 1) + 1 + q).to(tl.float64)
            ranked = tl.where((ci != di) & (ci == gq), lq, ranked)
        on = i <= k
        own = tl.where(kind == 1, on & (i != j), on)          # the draft's own probability
        value += tl.where(own & (kind != 2), l0, 0.0)
        value += tl.where((kind == 2) & on, tl.where(i < m, l0, ranked), 0.0)
        run = run & ((kind != 2) | (i > k) | (ci >= 0))
    # a swap's own guess, and whether it stands (not the draft, not the lookup's leaving token)
    gtok = tl.load(guess_ptr + row * gs_row + j * gs_pos + g, mask=live & (kind == 1), other=-1)
    glp = tl.load(lp_ptr + (row * W + j) * (G + 1) + 1 + g, mask=live & (kind == 1), other=0.0)
    value += tl.where(kind == 1, glp.to(tl.float64), 0.0)
    dj = tl.load(blocks_ptr + base + 1 + j, mask=live, other=-1)
    cj = tl.load(cont_ptr + row * W + j, mask=live, other=-1)
    dup = (gtok == dj) | (has & (m == j) & (gtok == cj))
    dk = tl.load(blocks_ptr + base + 1 + k, mask=live, other=-1)
    ck = tl.load(cont_ptr + row * W + k, mask=live, other=-1)
    tok = tl.where(kind == 0, dk, tl.where(kind == 1, tl.where(k == j, gtok, dk), ck))
    valid = live & ((kind == 0) | (ok & (kind == 1) & ~dup) | (has & (kind == 2) & (k >= m) & run))
    first = (kind == 2) & (k == m)
    par = tl.where(first, tl.where(m == 0, C, m - 1), par)
    depth = k + 1
    key = tl.where(valid, value - TIE * depth.to(tl.float64), float("-inf"))
    # pick the W best, one by one
    n = tl.arange(0, NP)
    sel = tl.full([NP], -1, tl.int32)
    sdep = tl.full([NP], 1 << 20, tl.int32)
    stok = tl.zeros([NP], dtype=tl.int64)
    spar = tl.zeros([NP], dtype=tl.int32)
    for t in tl.static_range(W):
        best = tl.argmax(key, axis=0)
        hit = c == best
        sel = tl.where(n == t, best, sel)
        sdep = tl.where(n == t, tl.sum(tl.where(hit, depth, 0), axis=0), sdep)
        stok = tl.where(n == t, tl.sum(tl.where(hit, tok, 0), axis=0), stok)
        spar = tl.where(n == t, tl.sum(tl.where(hit, par, 0), axis=0), spar)
        key = tl.where(hit, float("-inf"), key)
    # number by depth (pick order breaks ties): rank[t] = picks that come before t
    before = (sdep[None, :] < sdep[:, None]) | ((sdep[None, :] == sdep[:, None]) & (n[None, :] < n[:, None]))
    rank = tl.sum(before.to(tl.int32), axis=1) + 1
    match = sel[None, :] == spar[:, None]
    newpar = tl.sum(tl.where(match, rank[None, :], 0), axis=1)   # 0 where the parent is the anchor
    out = n < W
    tl.store(tok_ptr + base + rank, stok, mask=out)
    tl.store(par_ptr + base + rank, newpar.to(tl.int64), mask=out)
    tl.store(dep_ptr + base + rank, sdep.to(tl.int64), mask=out)
    tl.store(tok_ptr + base, tl.load(blocks_ptr + base))
    tl.store(par_ptr + base, -1)
    tl.store(dep_ptr + base, 0)


def triton_tree_plan(blocks: torch.Tensor, guesses: torch.Tensor, lp: torch.Tensor,
                     cont: torch.Tensor, unranked: torch.Tensor,
                     ok: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The Triton path (CUDA, or the CPU under TRITON_INTERPRET=1): one launch for the batch."""
    b, n = blocks.shape
    w, g = n - 1, guesses.shape[2]
    lanes = _lanes(w, g, str(blocks.device))
    out = [torch.empty((b, n), dtype=torch.int64, device=blocks.device) for _ in range(3)]
    if guesses.stride(2) != 1:
        guesses = guesses.contiguous()
    if b:  # the guesses read through their strides: the drafter's top ids past the first, as kept
        c = lanes.shape[1]
        _tree_plan_kernel[(b,)](blocks.contiguous(), guesses, guesses.stride(0), guesses.stride(1),
                                lp.float().contiguous(), cont.contiguous(),
                                unranked.float().contiguous(),
                                ok.view(torch.uint8) if ok.dtype == torch.bool else ok.contiguous(),
                                lanes, *out, c, TIE=TIE, W=w, G=g, CP=triton.next_power_of_2(c),
                                NP=max(16, triton.next_power_of_2(w)))
    return out[0], out[1], out[2]


def tree_plan(blocks: torch.Tensor, guesses: torch.Tensor, lp: torch.Tensor, cont: torch.Tensor,
              unranked: torch.Tensor, ok: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """tokens, parents, depths [b, N] (module doc); Triton on CUDA, the torch reference elsewhere."""
    impl = triton_tree_plan if blocks.is_cuda else reference_tree_plan
    return impl(blocks, guesses, lp, cont, unranked, ok)
