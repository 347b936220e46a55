"""A row's planned blocks as one token tree, for an engine that verifies a tree in one pass under
a tree mask (SGLang) rather than one row per block (the embedded engine's shadow rows).

The blocks of a row (planner.py: its chosen block first, then its extra blocks by rank) all start
after the same anchor, so they merge into a trie rooted at the anchor: a token shared by two
blocks at the same place is one node, verified once. Nodes are numbered in insertion order, so a
parent always comes before its children (the order a causal tree mask needs), node 0 is the
anchor, and a block that no longer fits the node budget is cut where the budget ends.

Verifying the tree: node i attends to its ancestors and itself (`ancestor_mask`), at position
anchor + depth(i); the target's choice after each node decides the accepted path, walked from
the anchor through the child whose token the target chose (`accepted_path`). That path is the
longest prefix any of the merged blocks shares with the target: what the shadow rows commit
when no block was cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


@dataclass(slots=True, frozen=True)
class TokenTree:
    tokens: tuple[int, ...]   # node i's token; node 0 is the anchor
    parents: tuple[int, ...]  # node i's parent; -1 for the anchor
    depths: tuple[int, ...]   # node i's distance from the anchor

    def __len__(self) -> int:
        return len(self.tokens)


def build_tree(anchor: int, blocks: Sequence[Sequence[int]], nodes: int) -> TokenTree:
    """The trie of `blocks` (drafts after `anchor`, each ended by its first -1) in their order,
    at most `nodes` nodes with the anchor."""
    if nodes < 1:
        raise ValueError(f"build_tree: nodes={nodes}, expected at least 1 (the anchor)")
    tokens, parents, depths = [anchor], [-1], [0]
    child: dict[tuple[int, int], int] = {}
    for block in blocks:
        at = 0
        for t in block:
            if t < 0:
                break
            nxt = child.get((at, t))
            if nxt is None:
                if len(tokens) == nodes:
                    break
                nxt = len(tokens)
                tokens.append(t)
                parents.append(at)
                depths.append(depths[at] + 1)
                child[(at, t)] = nxt
            at = nxt
    return TokenTree(tuple(tokens), tuple(parents), tuple(depths))


def best_first(anchor: int, blocks: Sequence[Sequence[int]], probs: Sequence[Sequence[float]],
               nodes: int) -> TokenTree:
    """The `nodes`-node tree (with the anchor) of the most likely nodes of `blocks`' trie, as
    EAGLE-2's dynamic tree keeps them: a node's value is the product of its tokens'
    probabilities along its path (`probs[b][d]` for block b's token d; a node reached by several
    blocks takes the largest), and the nodes of highest value are kept, ties to the earlier.
    A child never outranks its parent, so what is kept is a tree; it keeps insertion order."""
    if nodes < 1:
        raise ValueError(f"best_first: nodes={nodes}, expected at least 1 (the anchor)")
    if len(probs) != len(blocks):
        raise ValueError(f"best_first: {len(probs)} probability rows for {len(blocks)} blocks")
    tokens, parents, value = [anchor], [-1], [1.0]
    child: dict[tuple[int, int], int] = {}
    for block, ps in zip(blocks, probs, strict=True):
        at, v = 0, 1.0
        for t, p in zip(block, ps, strict=False):
            if t < 0:
                break
            v *= min(max(float(p), 0.0), 1.0)
            nxt = child.get((at, t))
            if nxt is None:
                nxt = len(tokens)
                tokens.append(t)
                parents.append(at)
                value.append(v)
                child[(at, t)] = nxt
            else:
                value[nxt] = max(value[nxt], v)
            at = nxt
    keep = sorted(sorted(range(1, len(tokens)), key=lambda i: -value[i])[: nodes - 1])
    new = {0: 0} | {old: i + 1 for i, old in enumerate(keep)}
    depth = [0]
    for old in keep:
        depth.append(depth[new[parents[old]]] + 1)
    return TokenTree((anchor, *(tokens[i] for i in keep)),
                     (-1, *(new[parents[i]] for i in keep)), tuple(depth))


def family(drafts: Sequence[int], probs: Sequence[float], guesses: Sequence[Sequence[int]],
           guess_probs: Sequence[Sequence[float]], cont: Sequence[int],
           unranked: float) -> tuple[list[list[int]], list[list[float]]]:
    """The candidate blocks of a row's tree in DFLASH's verify (and `best_first`'s probabilities
    of their tokens), the family the plugin's device planner (kernels/tree_plan.py) ranks:

    - the drafter's block (`drafts`, its probability of each: `probs`);
    - the prompt-lookup continuation `cont`, if it leaves that block: a token the drafter ranks
      takes its probability, any other `unranked` (the planner's rule sets it: high where the
      continuation would have replaced the block, low where it was passed over);
    - for each position d and guess g (`guesses[d]`, most likely first, with `guess_probs`):
      the block with draft d swapped for the guess, unless the lookup leaves the block there
      with that very token (one node: the lookup's).

    Every pair of these blocks parts at its first difference and never meets again, so their
    trie is the plain union the device planner builds without merging."""
    width = len(drafts)
    cont = [t for t in cont[:width]]
    if -1 in cont:
        cont = cont[: cont.index(-1)]
    leave = next((d for d, t in enumerate(cont) if t != drafts[d]), None)
    blocks, out = [list(drafts)], [list(probs)]
    if leave is not None:
        lp = []
        for d, t in enumerate(cont):
            if t == drafts[d]:
                lp.append(probs[d])
            elif t in guesses[d]:
                lp.append(guess_probs[d][list(guesses[d]).index(t)])
            else:
                lp.append(unranked)
        blocks.append(list(cont))
        out.append(lp)
    for d in range(width):
        for t, q in zip(guesses[d], guess_probs[d], strict=True):
            if t == drafts[d] or (leave == d and t == cont[d]):
                continue
            blocks.append(list(drafts[:d]) + [t] + list(drafts[d + 1:]))
            out.append(list(probs[:d]) + [q] + list(probs[d + 1:]))
    return blocks, out


def padded(tree: TokenTree, nodes: int, filler: int) -> TokenTree:
    """`tree` with `nodes` nodes exactly (a verify of fixed width): the missing ones are extra
    children of the anchor carrying `filler`, placed last. A real one-token branch each: if the
    target chose `filler` there, accepting it is still the target's own choice."""
    if len(tree) > nodes:
        raise ValueError(f"padded: a tree of {len(tree)} nodes does not fit {nodes}")
    extra = nodes - len(tree)
    return TokenTree(tree.tokens + (filler,) * extra, tree.parents + (0,) * extra,
                     tree.depths + (1,) * extra)


def batch_trees(anchors: Sequence[int], owner: Sequence[int], blocks: Sequence[Sequence[int]],
                nodes: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A step's plan (planner.StepPlan's `owner` and `blocks`: each row's chosen block first,
    then its extra blocks by rank) as one tree a row of exactly `nodes` nodes: tokens, parents
    and depths, [rows, nodes] int64, what kernels/tree_mask.py and kernels/tree_accept.py take.
    A row whose blocks fill fewer nodes is padded with one-token branches carrying its anchor
    (`padded`); a block past the budget is cut where it ends."""
    per_row: list[list[Sequence[int]]] = [[] for _ in anchors]
    for r, block in zip(owner, blocks, strict=True):
        per_row[r].append(block)
    trees = [padded(build_tree(a, bl, nodes), nodes, a) for a, bl in zip(anchors, per_row, strict=True)]
    tokens, parents, depths = (
        torch.tensor([getattr(t, f) for t in trees], dtype=torch.int64).reshape(len(trees), nodes)
        for f in ("tokens", "parents", "depths"))
    return tokens, parents, depths


def ancestor_mask(tree: TokenTree) -> list[list[bool]]:
    """mask[i][j]: node j is node i or one of its ancestors (what node i attends to)."""
    n = len(tree)
    mask = [[False] * n for _ in range(n)]
    for i in range(n):
        j = i
        while j >= 0:
            mask[i][j] = True
            j = tree.parents[j]
    return mask


def accepted_path(tree: TokenTree, target: Sequence[int]) -> list[int]:
    """The nodes the target accepts, from the anchor: `target[i]` is its choice after node i; at
    each node the walk moves to the child holding that choice (the first such, if repeated). The
    committed tokens are the path's tokens after the anchor, then target[path[-1]]."""
    kids: dict[int, list[int]] = {}
    for i, p in enumerate(tree.parents):
        if p >= 0:
            kids.setdefault(p, []).append(i)
    path = [0]
    while True:
        nxt = next((c for c in kids.get(path[-1], ()) if tree.tokens[c] == target[path[-1]]), None)
        if nxt is None:
            return path
        path.append(nxt)
