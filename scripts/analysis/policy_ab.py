"""Adaptive against always-on speculation on one engine, interleaved per prompt, no plain core.

usage: python scripts/analysis/policy_ab.py [--data models/assets/smollm2-dflash/heldout-run7.jsonl]
           [--source tools] [--n 16] [--max-new-tokens 64] [--passes 2] [--speculator default] [--pause-below 1,0.75]

`turnspec bench spec` runs a plain engine (a second model in memory) before each prompt's spec
configurations. This runs only the spec engine, the two policies back to back on each prompt
(each policy keeps its own measured step prices across the prompts, as in the bench), to tell
whether a gap between them in the bench belongs to the policies or to the bench's conditions.
Prints tok/s (decode time, first token to last) and the share of tokens from spec steps.
"""

from __future__ import annotations

import argparse

from turnspec.benchmarks.spec_runs import ConfigTotals, decode_one
from turnspec.engine.local.args import resolve_model_dir
from turnspec.engine.local.config import LocalEngineConfig
from turnspec.engine.local.core import EngineCore
from turnspec.engine.local.spec_policy import SpecPolicy
from turnspec.speculator.data import read_samples


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default="models/assets/smollm2-dflash/heldout-run7.jsonl")
    p.add_argument("--source", default="tools")
    p.add_argument("--n", type=int, default=16)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--passes", type=int, default=2)
    p.add_argument("--speculator", default="default")
    p.add_argument("--pause-below", default="1",
                   help="adaptive settings to compare, comma-separated (SpecPolicy.pause_below)")
    args = p.parse_args()
    core = EngineCore(LocalEngineConfig(model_dir=resolve_model_dir(None), speculator=args.speculator))
    held = [s for s in read_samples(args.data) if s.split == "heldout" and s.source == args.source]
    prompts = [list(s.input_ids[: s.prompt_len]) for s in held[: args.n]]
    if not prompts:
        raise SystemExit(f"{args.data}: no held-out {args.source!r} samples")
    # the engine's speculation options for this device (confidence, lookup) under each policy
    policies = {"always": SpecPolicy(mode="always")}
    for k in args.pause_below.split(","):
        policies[f"adaptive k={k}"] = SpecPolicy(pause_below=float(k))
    acc = {m: ConfigTotals() for m in policies}  # bench spec's own run and totals, so its numbers compare
    for _ in range(args.passes):
        for prompt in prompts:
            for mode, policy in policies.items():
                core.speculation.policy = policy
                acc[mode].add(*decode_one(core, prompt, args.max_new_tokens, core.spec_block))
    for mode, a in acc.items():
        r = a.result()
        print(f"{mode:16} {r['tok_s']:7.2f} tok/s  {r['generated']:5d} tokens in "
              f"{r['seconds']:6.2f} s  spec tokens {r['spec_share']:.1%}")


if __name__ == "__main__":
    main()
