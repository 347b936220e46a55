"""How far the engine's prompt-lookup choice is from the best choice, step by step.

usage: python scripts/analysis/lookup_oracle.py SAMPLES [--source independent-voice] [--n 64]
           [--drafter default] [--block-size 16] [--device cpu] [--json OUT]

Each verify step, a row verifies either the drafter's block or the prompt-lookup continuation
of its tokens so far (`engine.local.spec_step.takes_lookup`). This replays `--n` held-out
turns of one source (as `turnspec speculator eval` does, through `speculator.tau.replay_steps`)
three ways:
- drafter: never the lookup;
- rule: the engine's choice (`speculator.tau.with_lookup`);
- oracle: each step whichever of the two the target accepts further. No rule that picks one
  of the two can beat it; verifying both in one pass (a two-branch tree) would reach it.
Along the oracle's steps, the steps where the rule's pick accepts fewer drafts are counted by
the lookup source's match length (`ngram_lookup`) and by the side the rule took: which part
of the gap a better rule could close, and which only a two-branch verify could.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import torch
from torch import Tensor

from turnspec.engine.drafter.folder import load_drafter
from turnspec.engine.drafter.model import DFlashDrafter
from turnspec.engine.local.args import resolve_model_dir
from turnspec.engine.local.spec_step import LOOKUP_MATCH
from turnspec.speculator.data import Sample, read_samples
from turnspec.speculator.target import FrozenTarget
from turnspec.speculator.tau import (
    format_interval,
    lookup_continuations,
    replay_context,
    replay_order,
    replay_steps,
    tau_difference_interval,
    tau_interval,
    with_lookup,
)
from turnspec.speculator.train_io import eval_splits, resolve_device

MODES = ("drafter", "rule", "oracle")


def _bucket(match: int) -> str:
    """The lookup source's match with the row's last tokens: none, short (2-5), or a copy in
    progress (LOOKUP_MATCH = 6 or more, the engine's copy rule)."""
    if match == 0:
        return "no continuation"
    return f"match 2-{LOOKUP_MATCH - 1}" if match < LOOKUP_MATCH else f"match {LOOKUP_MATCH}+"


class OraclePick:
    """`replay_steps`' pick: the better of the drafter's block and the lookup continuation for
    each row; counts, per (match bucket, rule's side), the steps where the rule accepts less
    and the drafts it loses there."""

    def __init__(self, host_ids: list[list[int]]) -> None:
        self.host_ids = host_ids
        self.steps = 0
        self.missed: Counter[tuple[str, str]] = Counter()
        self.lost: Counter[tuple[str, str]] = Counter()

    def __call__(self, drafts: Tensor, logits: Tensor, anchor: Tensor, active: Tensor,
                 accepted_of) -> Tensor:
        width, live = drafts.shape[1], active.tolist()
        conts = lookup_continuations(self.host_ids, anchor, active, width)
        look = torch.tensor([cont + [-1] * (width - len(cont)) for cont, _ in conts],
                            dtype=drafts.dtype, device=drafts.device)
        rule = with_lookup(drafts, logits, self.host_ids, anchor, active, conts)
        a_d, a_l, a_r = accepted_of(drafts), accepted_of(look), accepted_of(rule)
        best = torch.maximum(a_d, a_l)
        took_lookup = (rule != drafts).any(-1)
        for r, (_, match) in enumerate(conts):
            if not live[r]:
                continue
            self.steps += 1
            gap = int(best[r] - a_r[r])
            if gap > 0:
                key = (_bucket(match), "rule took lookup" if took_lookup[r] else "rule took drafter")
                self.missed[key] += 1
                self.lost[key] += gap
        return torch.where((a_l > a_d)[:, None], look, drafts)


@torch.no_grad()
def oracle_replay(drafter: DFlashDrafter, target: FrozenTarget, samples: list[Sample], blk: int,
                  batch_size: int = 16, max_len: int = 2048) -> dict:
    """Tokens and steps per turn for each of MODES, and the oracle's tally of the rule's misses."""
    seqs = replay_order(samples, max_len)
    tokens: dict[str, list[int]] = {m: [] for m in MODES}
    steps: dict[str, list[int]] = {m: [] for m in MODES}
    missed, lost, oracle_steps = Counter(), Counter(), 0
    drafter.eval()
    for i in range(0, len(seqs), batch_size):
        batch = seqs[i : i + batch_size]
        context = replay_context(drafter, target, batch, max_len, blk)
        pick = OraclePick(context.ids.tolist())
        for mode in MODES:
            t = torch.zeros(len(batch), dtype=torch.long, device=target.device)
            n = torch.zeros_like(t)
            for st in replay_steps(drafter, target, batch, blk, max_len, context,
                                   lookup=mode == "rule", pick=pick if mode == "oracle" else None):
                t += torch.where(st.active, st.produced, 0)
                n += st.active
            tokens[mode] += t.tolist()
            steps[mode] += n.tolist()
        missed.update(pick.missed)
        lost.update(pick.lost)
        oracle_steps += pick.steps
    return {"tokens": tokens, "steps": steps, "oracle_steps": oracle_steps,
            "missed": [{"where": k[0], "rule": k[1], "steps": missed[k], "drafts_lost": lost[k]}
                       for k in sorted(missed)]}


def report(out: dict) -> tuple[str, dict]:
    """The table (tau per mode with its interval and its gain over the rule, then the misses)
    and the summary JSON."""
    tok = out["tokens"]["rule"]
    lines, summary = [f"{'mode':8s} {'tau':>6s} {'90% CI':>12s} {'vs rule':>8s} {'gain CI':>14s}"], {}
    for mode in MODES:
        t, n = out["tokens"][mode], out["steps"][mode]
        if t != tok:
            raise ValueError(f"{mode}: replayed other tokens than the rule; expected the same turns")
        tau, ci = sum(t) / sum(n), tau_interval(t, n)
        diff = tau - sum(tok) / sum(out["steps"]["rule"])
        dci = tau_difference_interval(t, out["steps"]["rule"], n)
        summary[mode] = {"tau": tau, "ci90": list(ci), "gain_over_rule": diff,
                         "gain_ci90": list(dci)}
        lines.append(f"{mode:8s} {tau:6.3f} {format_interval(ci):>12s} {diff:+8.3f} "
                     f"{format_interval(dci):>14s}")
    lines.append(f"\nsteps where the rule's pick accepts less than the better of the two "
                 f"(of {out['oracle_steps']} oracle steps):")
    for m in out["missed"]:
        lines.append(f"  {m['where']:16s} {m['rule']:18s} {m['steps']:6d} steps "
                     f"{m['drafts_lost']:6d} drafts")
    return "\n".join(lines), summary


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("samples", type=Path, help="datagen samples (a samples.jsonl or its folder)")
    p.add_argument("--source", default="independent-voice", help="split to replay (eval's names)")
    p.add_argument("--n", type=int, default=64, help="turns, spread over the split")
    p.add_argument("--drafter", default="default")
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--device", default="cpu")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    splits = eval_splits(read_samples(args.samples), args.n)
    if args.source not in splits:
        raise SystemExit(f"--source {args.source}: not in {args.samples}; expected one of {sorted(splits)}")
    dev = resolve_device(args.device)
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    drafter = load_drafter(args.drafter, device=dev, dtype=dtype)
    target = FrozenTarget.from_model_dir(resolve_model_dir(None), drafter.config.target_layer_ids,
                                         dev, dtype)
    out = oracle_replay(drafter, target, splits[args.source], args.block_size,
                        batch_size=128 if dev.type == "cuda" else 16)
    table, summary = report(out)
    print(table)
    if args.json:
        args.json.write_text(json.dumps({"samples": str(args.samples), "source": args.source,
                                         "turns": len(out["tokens"]["rule"]),
                                         "block_size": args.block_size, **summary,
                                         "missed": out["missed"]}, indent=2) + "\n")


if __name__ == "__main__":
    main()
