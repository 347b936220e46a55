"""Replay verify-branch plans in milliseconds: the drafter's outputs at every position of a split,
computed once, then any plan's greedy steps walked on the host.

usage: python scripts/analysis/branch_lab.py dump SAMPLES OUT.pt [--source independent-generic]
           [--n 120] [--drafter default] [--block-size 16] [--device cpu] [--guesses 7]
       python scripts/analysis/branch_lab.py sim OUT.pt [--branches 1,3,5,8]
           [--plan first,planned] [--datastore ANSWERS] [--nodes 16,32] [--json OUT]

A DFlash drafter's block at an anchor depends only on the tokens up to it, so one drafter pass
per position (`replay_steps` with a pick that accepts nothing, so each step moves one token)
gives every block any plan could verify there: the drafter's proposal at every position
(engine/spec/proposers/drafter.py: the greedy drafts, their probabilities, the expected accepted
drafts and the next guesses). `sim` then walks each turn through the engine's own planner
(engine/spec/planner.py `plan_step`, as `speculator eval` and the engine do), the furthest
accepted block committed (engine/spec/accept.py). Its τ equals the per-step replay's on the same
turns; tests/scripts/analysis/test_branch_lab.py holds it to that.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import Tensor

from turnspec.engine.drafter.model import DFlashDrafter
from turnspec.engine.sglang_plugin.trees import GUESSES, UNRANKED_PASS
from turnspec.engine.spec.accept import furthest
from turnspec.engine.spec.options import SpecOptions
from turnspec.engine.spec.planner import RowInput, plan_step, takes_lookup
from turnspec.engine.spec.proposers import Proposer
from turnspec.engine.spec.proposers.datastore import TokenDatastore
from turnspec.engine.spec.proposers.drafter import DrafterBlocks, propose_drafts
from turnspec.engine.spec.proposers.lookup import PromptLookup
from turnspec.engine.spec.swaps import BRANCH_PLANS
from turnspec.engine.spec.tree import TokenTree, accepted_path, best_first, family
from turnspec.speculator.data import Sample
from turnspec.speculator.evaluate import add_replay_arguments, replay_inputs
from turnspec.speculator.target import FrozenTarget
from turnspec.speculator.tau import (
    format_interval,
    replay_context,
    replay_order,
    replay_steps,
    tau_difference_interval,
    tau_interval,
)


@dataclass(slots=True)
class Turn:
    """One replayed turn: its tokens, first anchor and last position, and per anchor (from
    `start` to `end - 1`) the drafter's block, its probabilities, its expected accepted drafts
    (the planner's lookup rule weighs it) and its next guesses with their probabilities."""
    ids: list[int]
    start: int
    end: int
    drafts: list[list[int]]
    probs: list[list[float]]
    expected: list[float]
    guesses: list[list[list[int]]]
    guess_probs: list[list[list[float]]]


class _Recorder:
    """`replay_steps`' pick that records every anchor's drafter proposal and accepts nothing (so
    the replay visits every position)."""

    def __init__(self, k: int) -> None:
        self.k, self.rows = k, []

    def __call__(self, drafts: Tensor, logits: Tensor, anchor: Tensor, active: Tensor,
                 accepted_of) -> Tensor:
        got = propose_drafts(logits, [logits.shape[1]] * len(drafts), probabilities=True,
                             guesses=self.k)
        self.rows.append((active.tolist(), got.argmax, got.probs, got.expected, got.guesses,
                          got.guess_probs))
        return torch.full_like(drafts, -1)


@torch.no_grad()
def record_turns(drafter: DFlashDrafter, target: FrozenTarget, samples: list[Sample], blk: int,
                 guesses: int, progress: bool = False) -> list[Turn]:
    """The drafter's outputs at every anchor of each turn (in `replay_order`)."""
    drafter.eval()
    seqs, out = replay_order(samples, 2048), []
    batch = 128 if target.device.type == "cuda" else 16
    for i in range(0, len(seqs), batch):
        part = seqs[i : i + batch]
        ctx = replay_context(drafter, target, part, 2048, blk)
        rec = _Recorder(guesses)
        for _ in replay_steps(drafter, target, part, blk, 2048, ctx, pick=rec):
            pass
        ids = ctx.ids.tolist()
        for r in range(len(part)):
            start, end = int(ctx.start[r]), int(ctx.end[r])
            t = Turn(ids[r][: end + 1], start, end, [], [], [], [], [])
            for live, d, p, e, g, gp in rec.rows:
                if live[r]:
                    t.drafts.append(d[r])
                    t.probs.append(p[r])
                    t.expected.append(e[r])
                    t.guesses.append(g[r])
                    t.guess_probs.append(gp[r])
            if len(t.drafts) != end - start:
                raise RuntimeError(f"turn {i + r}: {len(t.drafts)} anchors recorded for "
                                   f"{end - start} positions; expected one per position")
            out.append(t)
        if progress:
            print(f"{min(i + batch, len(seqs))}/{len(seqs)} turns", flush=True)
    return out


def dump(args: argparse.Namespace) -> None:
    samples, drafter, target = replay_inputs(args)
    turns = record_turns(drafter, target, samples, args.block_size, args.guesses, progress=True)
    torch.save({"turns": [asdict(t) for t in turns], "source": args.source,
                "samples": str(args.samples), "block_size": args.block_size,
                "drafter": args.drafter, "guesses": args.guesses}, args.out)
    print(f"wrote {args.out}: {len(turns)} turns, {sum(t.end - t.start for t in turns)} anchors")


def load_turns(path: Path) -> tuple[list[Turn], dict]:
    blob = torch.load(path, weights_only=False)
    return [Turn(**t) for t in blob.pop("turns")], blob


def accepted(block: list[int], truth: list[int]) -> int:
    n = 0
    for d, t in zip(block, truth, strict=False):  # truth is cut at the turn's end
        if d != t:
            break
        n += 1
    return n


def token_probs(block: list[int], i: int, turn: Turn, unranked: float) -> list[float]:
    """The drafter's probability of each token of `block` at anchor index `i`: of its own draft,
    of one of its next guesses, else `unranked` (a lookup or datastore token it does not rank)."""
    out = []
    for d, t in enumerate(block):
        if t < 0:
            break
        if t == turn.drafts[i][d]:
            out.append(turn.probs[i][d])
        elif t in turn.guesses[i][d]:
            out.append(turn.guess_probs[i][d][turn.guesses[i][d].index(t)])
        else:
            out.append(unranked)
    return out


def tree_accepted(tree: TokenTree, truth: list[int]) -> int:
    """Drafts the target accepts from `tree`: the depth of its path along `truth`."""
    path = accepted_path(tree, truth_after(tree, truth))
    return tree.depths[path[-1]]


def truth_after(tree: TokenTree, truth: list[int]) -> list[int]:
    """The target's choice after each node: the answer's token at the node's depth (-2 past it)."""
    return [truth[d] if d < len(truth) else -2 for d in tree.depths]


def family_blocks(turn: Turn, i: int, a: int, lookup: PromptLookup,
                  opts: SpecOptions) -> tuple[list[list[int]], list[list[float]]]:
    """The SGLang plugin's tree candidates at anchor index `i` (position `a`): the lookup block
    alone where the planner's rule takes it (then followed by the drafter's drafts, as the
    plugin swaps it in), else tree.family over the drafter's block, trees.GUESSES guesses a
    position and the continuation the rule passed over (engine/sglang_plugin/trees.py)."""
    d, width = turn.drafts[i], len(turn.drafts[i])
    cont = lookup.propose(turn.ids[: a + 1], width)
    if cont.tokens and takes_lookup(cont.tokens, d, width, turn.expected[i], opts.lookup_below,
                                    cont.match):
        return [list(cont.tokens) + list(d[len(cont.tokens):])], [[1.0] * width]
    return family(d, turn.probs[i], [g[:GUESSES] for g in turn.guesses[i]],
                  [q[:GUESSES] for q in turn.guess_probs[i]], cont.tokens, UNRANKED_PASS)


def walk(turn: Turn, branches: int, plan: str, datastore: Proposer | None = None,
         nodes: int = 0, unranked: float = 0.5) -> tuple[int, int]:
    """(tokens, steps) of one turn verified as the engine does with `branches` verify branches
    (the lookup rule on), `plan` for the drafter's swapped blocks and a `datastore` branch last
    if given (`serve --spec-datastore`): the engine's planner over the recorded proposals.
    With `nodes`, the step's blocks verify as one tree of that many nodes, the most likely
    (tree.best_first, `token_probs`) instead of one row each; with `plan` "family", the tree of
    the SGLang plugin's candidates instead (`family_blocks`)."""
    opts = SpecOptions(branches=branches, plan="planned" if plan == "family" else plan)
    lookup = PromptLookup()
    a, tokens, steps = turn.start, 0, 0
    width = len(turn.drafts[0])
    while a < turn.end:
        i = a - turn.start
        k = opts.extra  # the engine keeps this many next guesses a position
        drafted = DrafterBlocks([turn.drafts[i]], [list(turn.drafts[i])], [turn.expected[i]],
                                [turn.probs[i]], [[g[:k] for g in turn.guesses[i]]],
                                [[q[:k] for q in turn.guess_probs[i]]])
        chosen = plan_step([RowInput(turn.ids[: a + 1], width, True)], drafted, opts, lookup,
                           datastore)
        truth = turn.ids[a + 1 : a + 1 + width]
        if nodes and plan == "family":
            blocks, probs = family_blocks(turn, i, a, lookup, opts)
            best = tree_accepted(best_first(turn.ids[a], blocks, probs, nodes), truth)
        elif nodes:
            probs = [token_probs(b, i, turn, unranked) for b in chosen.blocks]
            best = tree_accepted(best_first(turn.ids[a], chosen.blocks, probs, nodes), truth)
        else:
            got = [accepted(b, truth) for b in chosen.blocks]
            best = got[furthest(chosen.owner, got, 1)[0]]
        produced = max(1, min(best + 1, turn.end - a))
        tokens, steps, a = tokens + produced, steps + 1, a + produced
    return tokens, steps


def simulate(turns: list[Turn], branches: int, plan: str, datastore: Proposer | None = None,
             nodes: int = 0, unranked: float = 0.5) -> tuple[list[int], list[int]]:
    runs = [walk(t, branches, plan, datastore, nodes, unranked) for t in turns]
    return [r[0] for r in runs], [r[1] for r in runs]


def sim(args: argparse.Namespace) -> None:
    turns, meta = load_turns(args.dump)
    print(f"{args.dump}: {len(turns)} turns of {meta['source']}, block {meta['block_size']}")
    counts = [int(n) for n in args.branches.split(",")]
    plans = args.plan.split(",")
    unknown = set(plans) - set(BRANCH_PLANS)
    if unknown:
        raise SystemExit(f"--plan: unknown {sorted(unknown)}; expected of {BRANCH_PLANS}")
    store = TokenDatastore.from_path(args.datastore) if args.datastore else None
    results, base = {}, None
    print(f"{'mode':24s} {'tau':>6s} {'90% CI':>12s} {'vs first':>9s} {'gain CI':>14s}")
    for n in counts:
        first = None
        for name in (plans if n > 1 else plans[:1]):
            tok, st = simulate(turns, n, name)
            base = base or tok
            if tok != base:
                raise RuntimeError(f"{n} {name}: other tokens than the first mode's")
            tau = sum(tok) / sum(st)
            mode = f"{n} branches {name}" if n > 1 else "rule"
            line = f"{mode:24s} {tau:6.3f} {format_interval(tau_interval(tok, st)):>12s}"
            results[mode] = {"tau": tau, "ci90": list(tau_interval(tok, st)), "steps": sum(st)}
            if first is None:
                first = st
            else:
                d = tau - sum(tok) / sum(first)
                ci = tau_difference_interval(tok, first, st)
                line += f" {d:+9.3f} {format_interval(ci):>14s}"
                results[mode].update(gain_over_first=d, gain_ci90=list(ci))
            print(line, flush=True)
            if store is not None and n > 1:  # the datastore's gain over the same plan
                tok_ds, st_ds = simulate(turns, n, name, store)
                tau_ds = sum(tok_ds) / sum(st_ds)
                ci = tau_difference_interval(tok, st, st_ds)
                print(f"{f'{n} branches {name} +ds':24s} {tau_ds:6.3f} "
                      f"{format_interval(tau_interval(tok_ds, st_ds)):>12s} "
                      f"{tau_ds - sum(tok) / sum(st):+9.3f} {format_interval(ci):>14s} over no ds")
                results[f"{n} branches {name} +ds"] = {
                    "tau": tau_ds, "ci90": list(tau_interval(tok_ds, st_ds)),
                    "gain_over_no_ds": tau_ds - sum(tok) / sum(st), "gain_ci90": list(ci)}
    for n in [int(x) for x in args.nodes.split(",") if x]:  # one tree of n nodes a step
        for cands in (f"{counts[-1]} branches {plans[-1]}", "family"):
            plan = "family" if cands == "family" else plans[-1]
            tok, st = simulate(turns, counts[-1], plan, None, n, args.unranked)
            tau = sum(tok) / sum(st)
            mode = f"tree of {n}, {cands}"
            print(f"{mode:24s} {tau:6.3f} {format_interval(tau_interval(tok, st)):>12s}",
                  flush=True)
            results[mode] = {"tau": tau, "ci90": list(tau_interval(tok, st)), "steps": sum(st),
                             "unranked": args.unranked if plan != "family" else "by the rule"}
    if args.json:
        args.json.write_text(json.dumps({**meta, "turns": len(turns), "datastore": (
            str(args.datastore) if args.datastore else None), **results}, indent=2) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump", help="the drafter's outputs at every anchor of a split")
    add_replay_arguments(d, source="independent-generic", n=120)
    d.add_argument("out", type=Path)
    d.add_argument("--guesses", type=int, default=7, help="next guesses kept per position")
    s = sub.add_parser("sim", help="walk the dumped turns under verify-branch plans")
    s.add_argument("dump", type=Path)
    s.add_argument("--branches", default="1,3,5,8")
    s.add_argument("--plan", default="first,planned")
    s.add_argument("--datastore", type=Path, default=None,
                   help="also each count and plan with a datastore branch, as serve "
                        "--spec-datastore PATH (the gain over the same without)")
    s.add_argument("--nodes", default="", help="also verify one tree a step of each of these "
                   "node counts (with the anchor): the most likely nodes of the last --branches "
                   "and --plan's blocks (engine/spec/tree.py best_first), and of the SGLang "
                   "plugin's candidates (tree.family; needs a dump with --guesses 3 or more)")
    s.add_argument("--unranked", type=float, default=0.6, help="the probability a tree gives a "
                   "token the drafter does not rank (lookup, datastore)")
    s.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    dump(args) if args.cmd == "dump" else sim(args)


if __name__ == "__main__":
    main()
