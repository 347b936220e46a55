"""How far the engine's prompt-lookup choice is from the best choice, and what verifying
several branches per step (`turnspec serve --spec-branches N`) reaches, step by step.

usage: python scripts/analysis/lookup_oracle.py SAMPLES [--source independent-voice] [--n 64]
           [--branches 2] [--plan first,planned] [--drafter default] [--block-size 16]
           [--device cpu] [--json OUT]

Each verify step, a row verifies either the drafter's block or the prompt-lookup continuation
of its tokens so far (`engine.spec.planner.takes_lookup`). This replays `--n` held-out
turns of one source (as `turnspec speculator eval` does, through `speculator.tau.replay_steps`):
- drafter: never the lookup;
- rule: the engine's choice (the planner with one branch, `speculator.tau_lookup.PlannedPick`);
- N branches, for each N of --branches: the rule's block and the engine's other candidates
  (`engine.spec.planner.row_candidates`: the block the rule passed over, then the
  drafter's block under its next first tokens), each step the one the target accepts
  furthest: exactly what the engine's multi-branch verify commits; with `--plan planned` also
  as `--spec-branch-plan planned` builds them ("N branches planned", with its paired gain over
  the same count's first-draft swaps).
Along the steps of the smallest N, the steps where the rule's pick accepts fewer drafts than
the better of the drafter's block and the lookup continuation (the best any rule choosing
between the two could do) are counted by the lookup source's match length (`ngram_lookup`)
and by the side the rule took: which part of that gap a better rule could close, and which
only a second branch could.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

import torch
from torch import Tensor

from turnspec.engine.drafter.model import DFlashDrafter
from turnspec.engine.spec.options import MAX_BRANCHES as MAX_SPEC_BRANCHES
from turnspec.engine.spec.options import SpecOptions
from turnspec.engine.spec.planner import LOOKUP_MATCH
from turnspec.engine.spec.swaps import BRANCH_PLANS
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
from turnspec.speculator.tau_lookup import PlannedPick, lookup_continuations

BASE_MODES = ("drafter", "rule")


def _bucket(match: int) -> str:
    """The lookup source's match with the row's last tokens: none, short (2-5), or a copy in
    progress (LOOKUP_MATCH = 6 or more, the engine's copy rule)."""
    if match == 0:
        return "no continuation"
    return f"match 2-{LOOKUP_MATCH - 1}" if match < LOOKUP_MATCH else f"match {LOOKUP_MATCH}+"


def branches_mode(n: int, plan: str = "first") -> str:
    return f"{n} branches" + ("" if plan == "first" else f" {plan}")


class OraclePick(PlannedPick):
    """`replay_steps`' pick for `branches` verify branches a row, as the engine verifies them
    (`PlannedPick`). With `tally`, it also counts, per (match bucket, rule's side), the steps
    where the rule accepts less than the better of the drafter's block and the lookup
    continuation, and the drafts it loses there."""

    def __init__(self, host_ids: list[list[int]], branches: int = 2, tally: bool = True,
                 plan: str = "first") -> None:
        super().__init__(host_ids, SpecOptions(lookup=True, branches=branches, plan=plan))
        self.tally = tally
        self.steps = 0
        self.missed: Counter[tuple[str, str]] = Counter()
        self.lost: Counter[tuple[str, str]] = Counter()

    def seen(self, drafts: Tensor, rule: Tensor, accepted_rule: Tensor, anchor: Tensor,
             active: Tensor, accepted_of) -> None:
        if not self.tally:
            return
        width = drafts.shape[1]
        conts = lookup_continuations(self.host_ids, anchor, active, width)
        look = torch.tensor([c + [-1] * (width - len(c)) for c, _ in conts],
                            dtype=drafts.dtype, device=drafts.device)
        best = torch.maximum(accepted_of(drafts), accepted_of(look))
        took_lookup = (rule != drafts).any(-1)
        for r, ((_, match), live) in enumerate(zip(conts, active.tolist(), strict=True)):
            if not live:
                continue
            self.steps += 1
            gap = int(best[r] - accepted_rule[r])
            if gap > 0:
                key = (_bucket(match), "rule took lookup" if took_lookup[r] else "rule took drafter")
                self.missed[key] += 1
                self.lost[key] += gap


@torch.no_grad()
def oracle_replay(drafter: DFlashDrafter, target: FrozenTarget, samples: list[Sample], blk: int,
                  batch_size: int = 16, max_len: int = 2048,
                  branches: tuple[int, ...] = (2,), plans: tuple[str, ...] = ("first",)) -> dict:
    """Tokens and steps per turn for the base modes and each branch count under each branch
    plan (`PlannedPick`), and the tally of the rule's misses along the smallest count's steps
    (the first plan's)."""
    runs = [(n, plan) for n in branches for plan in plans]
    modes = [*BASE_MODES, *(branches_mode(n, plan) for n, plan in runs)]
    seqs = replay_order(samples, max_len)
    tokens: dict[str, list[int]] = {m: [] for m in modes}
    steps: dict[str, list[int]] = {m: [] for m in modes}
    missed, lost, oracle_steps = Counter(), Counter(), 0
    drafter.eval()
    for i in range(0, len(seqs), batch_size):
        batch = seqs[i : i + batch_size]
        context = replay_context(drafter, target, batch, max_len, blk)
        host = context.ids.tolist()
        picks = {branches_mode(n, plan): OraclePick(host, n, tally=n == min(branches) and
                                                    plan == plans[0], plan=plan)
                 for n, plan in runs}
        for mode in modes:
            t = torch.zeros(len(batch), dtype=torch.long, device=target.device)
            n = torch.zeros_like(t)
            for st in replay_steps(drafter, target, batch, blk, max_len, context,
                                   lookup=mode == "rule", pick=picks.get(mode)):
                t += torch.where(st.active, st.produced, 0)
                n += st.active
            tokens[mode] += t.tolist()
            steps[mode] += n.tolist()
        for pick in picks.values():
            missed.update(pick.missed)
            lost.update(pick.lost)
            oracle_steps += pick.steps
    return {"modes": modes, "tokens": tokens, "steps": steps, "oracle_steps": oracle_steps,
            "missed": [{"where": k[0], "rule": k[1], "steps": missed[k], "drafts_lost": lost[k]}
                       for k in sorted(missed)]}


def report(out: dict) -> tuple[str, dict]:
    """The table (tau per mode with its interval and its gain over the rule, then the misses)
    and the summary JSON."""
    tok = out["tokens"]["rule"]
    lines, summary = [f"{'mode':19s} {'tau':>6s} {'90% CI':>12s} {'vs rule':>8s} {'gain CI':>14s}"], {}
    for mode in out["modes"]:
        t, n = out["tokens"][mode], out["steps"][mode]
        if t != tok:
            raise ValueError(f"{mode}: replayed other tokens than the rule; expected the same turns")
        tau, ci = sum(t) / sum(n), tau_interval(t, n)
        diff = tau - sum(tok) / sum(out["steps"]["rule"])
        dci = tau_difference_interval(t, out["steps"]["rule"], n)
        summary[mode] = {"tau": tau, "ci90": list(ci), "gain_over_rule": diff,
                         "gain_ci90": list(dci)}
        line = (f"{mode:19s} {tau:6.3f} {format_interval(ci):>12s} {diff:+8.3f} "
                f"{format_interval(dci):>14s}")
        first = mode.split(" branches")[0] + " branches"  # the same count, planned "first"
        if mode != first and first in out["steps"]:
            fdiff = tau - sum(tok) / sum(out["steps"][first])
            fci = tau_difference_interval(t, out["steps"][first], n)
            summary[mode].update(gain_over_first=fdiff, gain_over_first_ci90=list(fci))
            line += f"   {fdiff:+.3f} ({format_interval(fci)}) over {first}"
        lines.append(line)
    if out["oracle_steps"]:
        lines.append(f"\nsteps where the rule's pick accepts less than the better of the drafter's "
                     f"block and the lookup (of {out['oracle_steps']} steps):")
    for m in out["missed"]:
        lines.append(f"  {m['where']:16s} {m['rule']:18s} {m['steps']:6d} steps "
                     f"{m['drafts_lost']:6d} drafts")
    return "\n".join(lines), summary


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_replay_arguments(p, source="independent-voice", n=64)
    p.add_argument("--branches", default="2",
                   help="verify branch counts to replay, comma-separated, each 2..MAX_SPEC_BRANCHES "
                        "(16; default: 2)")
    p.add_argument("--plan", default="first",
                   help="branch plans to replay, comma-separated (first, planned; default: first)")
    args = p.parse_args()
    plans = tuple(args.plan.split(","))
    if not plans or not set(plans) <= set(BRANCH_PLANS):
        raise SystemExit(f"--plan {args.plan}: expected plans of {BRANCH_PLANS}, comma-separated")
    turns, drafter, target = replay_inputs(args)
    dev = target.device
    branches = tuple(int(n) for n in args.branches.split(","))
    if not all(2 <= n <= MAX_SPEC_BRANCHES for n in branches):
        raise SystemExit(f"--branches {args.branches}: expected counts 2..{MAX_SPEC_BRANCHES}, "
                         "comma-separated")
    out = oracle_replay(drafter, target, turns, args.block_size,
                        batch_size=128 if dev.type == "cuda" else 16, branches=branches,
                        plans=plans)
    table, summary = report(out)
    print(table)
    if args.json:
        args.json.write_text(json.dumps({"samples": str(args.samples), "source": args.source,
                                         "turns": len(out["tokens"]["rule"]),
                                         "block_size": args.block_size, **summary,
                                         "missed": out["missed"]}, indent=2) + "\n")


if __name__ == "__main__":
    main()
