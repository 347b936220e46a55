"""Where greedy drafting stops: the token each verify step failed to draft, by kind.

usage: python scripts/analysis/tau_misses.py HELDOUT.jsonl.xz [--source tools] [--n 100]
           [--drafter default] [--block-size 16] [--json OUT]

Replays `--n` held-out turns of one source (as `turnspec speculator eval` does, through
`speculator.tau.replay_steps`) and, for every step that stopped before the block's end, looks
at the first token the drafter got wrong (the token the target committed as the bonus):
- where it is: inside a `<tool_call>` ... `</tool_call>` span of the answer, or in spoken text;
- whether it could be copied: the missed token with the two before it occurs in the prompt;
- which slot it was (slot 1 = the drafter's first guess was already wrong).
The table says which kind of token costs the steps, which says which data would help: a
drafter that misses copyable tokens needs more in-context copying (synthetic calls), one that
misses the target's own phrasing in spoken text needs more of the target's chat answers.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

import torch
from transformers import AutoTokenizer

from turnspec.engine.drafter.folder import load_drafter
from turnspec.engine.local.args import resolve_model_dir
from turnspec.speculator.data import read_samples
from turnspec.speculator.target import FrozenTarget
from turnspec.speculator.tau import replay_steps
from turnspec.speculator.train_io import eval_splits


def _call_mask(ids: list[int], start: int, open_ids: list[int], close_ids: list[int]) -> list[bool]:
    """Per position from `start`: inside a tool call (its opening tag included, closing too)."""
    inside, out, i = False, [False] * len(ids), start
    while i < len(ids):
        if ids[i : i + len(open_ids)] == open_ids:
            inside = True
        out[i] = inside
        if inside and ids[i : i + len(close_ids)] == close_ids:
            for j in range(i, min(i + len(close_ids), len(ids))):
                out[j] = True
            i += len(close_ids)
            inside = False
            continue
        i += 1
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("data", help="held-out samples, e.g. models/data/smollm2-dflash/heldout-seed17.jsonl.xz")
    p.add_argument("--source", default="tools", help="tools | synthetic | readback | generic | independent-voice | independent-generic")
    p.add_argument("--n", type=int, default=100,
                   help="turns, spread over the file as `turnspec speculator eval --samples N` picks them")
    p.add_argument("--drafter", default="default")
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--json", help="write the counts here")
    args = p.parse_args()
    drafter = load_drafter(args.drafter)
    model_dir = resolve_model_dir(None)
    target = FrozenTarget.from_model_dir(model_dir, drafter.config.target_layer_ids)
    tok = AutoTokenizer.from_pretrained(model_dir)
    open_ids = tok.encode("<tool_call>", add_special_tokens=False)
    close_ids = tok.encode("</tool_call>", add_special_tokens=False)
    splits = eval_splits(read_samples(args.data), args.n)
    # the independent set's sources name their split alone (train_io.eval_splits)
    seqs = splits.get(args.source) or splits.get(f"{args.source}-heldout")
    if not seqs:
        raise SystemExit(f"{args.data}: no held-out samples of source {args.source!r}")
    seqs = sorted(seqs, key=lambda s: len(s.input_ids))
    steps, tokens = Counter(), Counter()
    for i in range(0, len(seqs), args.batch_size):
        batch = seqs[i : i + args.batch_size]
        masks = [_call_mask(s.input_ids, s.prompt_len, open_ids, close_ids) for s in batch]
        # the prompt's trigrams, once per turn: a miss is copyable when its trigram is one
        grams = [{s.input_ids[j : j + 3] for j in range(s.prompt_len - 2)} for s in batch]
        for st in replay_steps(drafter, target, batch, args.block_size, 2048):
            for r in torch.nonzero(st.active).flatten().tolist():
                a, n, made = int(st.anchor[r]), int(st.accepted[r]), int(st.produced[r])
                miss = a + n + 1                          # the bonus: the first token not drafted
                if n == args.block_size - 1 or made < n + 1 or miss >= len(batch[r].input_ids):
                    kind = "full block or end"
                else:
                    where = "call" if masks[r][miss] else "text"
                    copy = batch[r].input_ids[miss - 2 : miss + 1] in grams[r]
                    slot = "slot 1" if n == 0 else "slot 2+"
                    kind = f"{where}, {'copyable' if copy else 'new'}, {slot}"
                steps[kind] += 1
                tokens[kind] += made
    total = sum(steps.values())
    print(f"{args.source} held-out, {len(seqs)} turns, B={args.block_size}: "
          f"tau {sum(tokens.values()) / total:.2f} over {total} steps")
    print(f"{'step stopped at':38} {'steps':>6} {'share':>6} {'tokens/step':>11}")
    for kind, c in steps.most_common():
        print(f"{kind:38} {c:6d} {c / total:6.1%} {tokens[kind] / c:11.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"data": args.data, "source": args.source, "turns": len(seqs),
                       "block_size": args.block_size, "steps": dict(steps),
                       "tokens": dict(tokens)}, f, indent=2)


if __name__ == "__main__":
    main()
