"""Would other node values, or other candidates, give the plugin's trees more τ at the same node
count? The plugin keeps the N - 1 nodes of highest path probability among its family (the
drafter's block, its single swaps, the lookup: engine/spec/tree.py `best_first(family(...))`).
Two alternatives, each replayed on the same turns against it:

- `calibrated`: each token's probability replaced by the acceptance rate measured for its kind,
  depth and probability (a DFlash drafter's probabilities are marginals per position, not the
  chance a node is right once its parent was), fitted on one half of the turns and scored on the
  other (two folds);
- `lattice`: the best-first tree over every path of the drafter's top tokens a position (its
  draft and next guesses, any number swapped, as DDTree-style trees take them) and the lookup's
  tokens along its own path, instead of single swaps only.

usage: python scripts/analysis/tree_values.py DUMP.pt [--nodes 16,32] [--json OUT]
       (DUMP from `branch_lab.py dump ... --guesses 3`)

Kinds of a node (tree.family's blocks): `draft` (the drafter's block, before any deviation),
`swap` (a next guess swapped in), `after` (a draft after a swap), `lookup` (the prompt-lookup
continuation from where it leaves the block).
"""

from __future__ import annotations

import argparse
import heapq
import json
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from branch_lab import Turn, family_blocks, load_turns, tree_accepted  # noqa: E402

from turnspec.engine.sglang_plugin.trees import GUESSES, UNRANKED_PASS  # noqa: E402
from turnspec.engine.spec.options import SpecOptions  # noqa: E402
from turnspec.engine.spec.proposers.lookup import PromptLookup  # noqa: E402
from turnspec.engine.spec.tree import best_first  # noqa: E402
from turnspec.speculator.tau import (  # noqa: E402
    format_interval,
    tau_difference_interval,
    tau_interval,
)

KINDS = ("draft", "swap", "after", "lookup")
EDGES = (0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0001)
PRIOR = 20.0  # pseudo-counts of a cell's own mean probability (few nodes: close to raw)
OPTS = SpecOptions(branches=2, plan="planned")  # the lookup rule as the plugin runs it

Labelled = tuple[list[list[int]], list[list[float]], list[list[str]]]
Table = dict[tuple[int, int, int], float]


def labelled(turn: Turn, i: int, a: int, lookup: PromptLookup) -> Labelled:
    """The plugin's tree candidates at anchor index `i` (branch_lab.family_blocks) and each
    token's kind; a row whose rule takes the lookup verifies one chain (kind `lookup` past the
    block's agreement)."""
    blocks, probs = family_blocks(turn, i, a, lookup, OPTS)
    drafts, width = turn.drafts[i], len(turn.drafts[i])
    kinds = []
    for block in blocks:
        diff = [d for d, t in enumerate(block) if t >= 0 and t != drafts[d]]
        if not diff:
            kinds.append(["draft"] * len(block))
            continue
        d0, rest = diff[0], len(block) - diff[0] - 1
        swap = (len(blocks) > 1 and len(block) == width and len(diff) == 1
                and block[d0] in turn.guesses[i][d0][:GUESSES])
        kinds.append(["draft"] * d0 + (["swap"] + ["after"] * rest if swap
                                       else ["lookup"] * (rest + 1)))
    return blocks, probs, kinds


def cell(kind: str, depth: int, p: float) -> tuple[int, int, int]:
    b = next(j for j in range(len(EDGES) - 1) if p < EDGES[j + 1])
    return KINDS.index(kind), depth, b


def fit(turns: list[Turn]) -> Table:
    """Each (kind, depth, probability bin)'s acceptance rate over every anchor of `turns`: of
    the family's nodes whose parent the target accepted, the share it accepted too, shrunk
    toward the cell's mean probability by PRIOR pseudo-counts."""
    lookup, seen = PromptLookup(), {}
    for turn in turns:
        for a in range(turn.start, turn.end):
            i = a - turn.start
            truth = turn.ids[a + 1: a + 1 + len(turn.drafts[i])]
            blocks, probs, kinds = labelled(turn, i, a, lookup)
            nodes: set[tuple[int, ...]] = set()
            for block, ps, ks in zip(blocks, probs, kinds, strict=True):
                for d, t in enumerate(block):
                    if t < 0 or d >= len(truth) or list(block[:d]) != truth[:d]:
                        break
                    if tuple(block[: d + 1]) not in nodes:
                        nodes.add(tuple(block[: d + 1]))
                        s = seen.setdefault(cell(ks[d], d, ps[d]), [0.0, 0.0, 0.0])
                        s[0], s[1], s[2] = s[0] + (t == truth[d]), s[1] + 1, s[2] + ps[d]
    return {c: (acc + PRIOR * psum / n) / (n + PRIOR) for c, (acc, n, psum) in seen.items()}


def lattice_depth(turn: Turn, i: int, cont: list[int], nodes: int, truth: list[int]) -> int:
    """Drafts the target accepts from the `nodes`-node best-first tree over every path of the
    drafter's draft and GUESSES next guesses a position (plus the lookup continuation `cont`'s
    token, at UNRANKED_PASS where the drafter does not rank it, along its own path)."""
    drafts, width = turn.drafts[i], len(turn.drafts[i])
    cont = cont[: cont.index(-1)] if -1 in cont else cont

    def children(path: tuple[int, ...]) -> list[tuple[int, float]]:
        d = len(path)
        if d >= width:
            return []
        out = {drafts[d]: turn.probs[i][d]}
        for t, q in zip(turn.guesses[i][d][:GUESSES], turn.guess_probs[i][d][:GUESSES],
                        strict=True):
            out.setdefault(t, q)
        if d < len(cont) and list(path) == cont[:d]:
            out.setdefault(cont[d], UNRANKED_PASS)
        return list(out.items())

    heap = [(-q, (t,)) for t, q in children(())]
    heapq.heapify(heap)
    kept: set[tuple[int, ...]] = set()
    while heap and len(kept) < nodes - 1:
        value, path = heapq.heappop(heap)
        kept.add(path)
        for t, q in children(path):
            heapq.heappush(heap, (value * q, (*path, t)))
    n = 0
    while n < len(truth) and tuple(truth[: n + 1]) in kept:
        n += 1
    return n


def walk(turn: Turn, nodes: int, value: Callable[[str, int, float], float] | None) -> tuple[int, int]:
    """(tokens, steps) of `turn` verified one tree of `nodes` a step: the plugin's family with
    each token's probability read through `value(kind, depth, p)`, or (None) the lattice; a row
    whose rule takes the lookup verifies that chain either way."""
    lookup = PromptLookup()
    a, tokens, steps = turn.start, 0, 0
    while a < turn.end:
        i = a - turn.start
        truth = turn.ids[a + 1: a + 1 + len(turn.drafts[i])]
        blocks, probs, kinds = labelled(turn, i, a, lookup)
        if value is None and len(blocks) > 1:
            cont = list(lookup.propose(turn.ids[: a + 1], len(turn.drafts[i])).tokens)
            best = lattice_depth(turn, i, cont, nodes, truth)
        else:
            fn = value or (lambda k, d, q: q)
            vals = [[fn(k, d, q) for d, (k, q) in enumerate(zip(ks, ps, strict=False))]
                    for ks, ps in zip(kinds, probs, strict=True)]
            best = tree_accepted(best_first(turn.ids[a], blocks, vals, nodes), truth)
        produced = max(1, min(best + 1, turn.end - a))
        tokens, steps, a = tokens + produced, steps + 1, a + produced
    return tokens, steps


def compare(turns: list[Turn], nodes: int) -> dict[str, tuple[list[int], list[int]]]:
    """(tokens, steps) per turn of each tree, turns in the same order: fold 0, then fold 1."""
    folds = [turns[0::2], turns[1::2]]
    tables = [fit(folds[1]), fit(folds[0])]  # each fold scored with the other's table
    values: dict[str, list] = {
        "family": [lambda k, d, q: q] * 2,
        "calibrated": [lambda k, d, q, t=t: t.get(cell(k, d, q), q) for t in tables],
        "lattice": [None, None]}
    out = {}
    for name, fns in values.items():
        runs = [walk(t, nodes, fn) for fold, fn in zip(folds, fns, strict=True) for t in fold]
        out[name] = ([r[0] for r in runs], [r[1] for r in runs])
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dump", type=Path)
    p.add_argument("--nodes", default="16,32")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    turns, meta = load_turns(args.dump)
    out: dict = {"dump": str(args.dump), "source": meta["source"], "turns": len(turns), "tau": {}}
    for n in [int(x) for x in args.nodes.split(",")]:
        rows = compare(turns, n)
        base_tok, base_st = rows["family"]
        for name, (tok, st) in rows.items():
            tau = sum(tok) / sum(st)
            line = f"{n:3d} nodes {name:10s} tau {tau:6.3f} {format_interval(tau_interval(tok, st))}"
            res = {"tau": tau, "ci90": list(tau_interval(tok, st))}
            if name != "family":
                gain, ci = tau - sum(base_tok) / sum(base_st), tau_difference_interval(
                    tok, base_st, st)
                line += f"  {gain:+.3f} {format_interval(ci)} over the family"
                res.update(gain=gain, gain_ci90=list(ci))
            out["tau"][f"{n} {name}"] = res
            print(line, flush=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
