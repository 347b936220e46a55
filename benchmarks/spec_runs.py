"""`turnspec bench spec`'s timed runs: one prompt through one engine configuration
(`decode_one`), every configuration interleaved prompt by prompt (`timed_pass`), transformers'
generate beside them (`run_hf`), and the totals a configuration collects (`ConfigTotals`)."""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field, replace

import torch

from turnspec.engine.local.spec_build import Speculation, respecified
from turnspec.speculator.tau import tau_interval


@dataclass(slots=True)
class ConfigTotals:
    """One configuration's totals over the prompts of a source."""

    tokens: list[list[int]] = field(default_factory=list)
    secs: float = 0.0
    steps: list[int] = field(default_factory=list)      # verify steps, per prompt
    committed: list[int] = field(default_factory=list)  # tokens from verify steps, per prompt

    def add(self, tokens: list[int], secs: float, steps: int = 0, committed: int = 0) -> None:
        self.tokens.append(tokens)
        self.secs += secs
        self.steps.append(steps)
        self.committed.append(committed)

    def result(self) -> dict:
        n = sum(len(t) - 1 for t in self.tokens)
        steps, committed = sum(self.steps), sum(self.committed)
        return {"tok_s": n / self.secs, "seconds": self.secs, "generated": n,
                "tau": committed / steps if steps else None,
                "tau_ci90": tau_interval(self.committed, self.steps) if steps else None,
                "spec_share": committed / n if steps and n else None}


def decode_one(core, prompt: list[int], max_new: int, block: int | None) -> tuple:
    """One prompt from a cold prefix cache. Decode time only (first token to last), so
    prefill — identical with or without speculation — does not dilute tok/s."""
    from turnspec.benchmarks import runs as B

    B.clear_prefix_cache(core)
    r = B.run_core(core, [prompt], max_new, concurrent=False, spec_block_size=block)
    spec = r.spec[0]
    return (r.tokens[0], r.seconds[0] - r.ttft_ms[0] / 1000.0,
            spec.verify_steps if spec else 0, spec.committed_tokens if spec else 0)


def engine_runs(plain_core, spec_cores: dict[str, object], prompt: list[int], max_new: int,
                 states: dict[tuple, Speculation]) -> list[tuple]:
    """`decode_one` for no speculation, then for each (policy, block, confidence, lookup,
    branches, plan, datastore, drafter) in `states` order with that configuration's speculation
    (its options and policy state, `config_states`) on that drafter's spec core ("main" or "peer")."""
    runs = [decode_one(plain_core, prompt, max_new, None)]
    for (_, block, *_, drafter), spec in states.items():
        core = spec_cores[drafter]
        core.speculation = spec
        runs.append(decode_one(core, prompt, max_new, block))
    return runs


def config_states(configs: list[tuple], bases: dict[str, Speculation],
            max_batch: int) -> dict[tuple, Speculation]:
    """Each configuration (policy, block, confidence, lookup, branches, plan, datastore,
    drafter) as a speculation of its drafter's core (`bases`: each core's own, built for the
    widest configuration), with a fresh policy state, as `engine_runs` takes them."""
    out = {}
    for c in configs:
        base = bases[c[7]]
        opts = replace(base.options, min_confidence=c[2], lookup=c[3], branches=c[4], plan=c[5])
        out[c] = respecified(base, opts, c[0], max_batch, datastore=c[6])
    return out


def run_hf(hf, prompt: list[int], max_new: int, eos: int, lookup: int | None) -> tuple:
    """Same accounting as decode_one: decode time = generate time minus a 1-token generate
    (the prefill and first token) on the same prompt."""
    kw = {"prompt_lookup_num_tokens": lookup} if lookup else {}
    x = torch.tensor([prompt], device=hf.device)
    t0 = time.perf_counter()
    hf.generate(x, max_new_tokens=1, do_sample=False, eos_token_id=eos, pad_token_id=eos)
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = hf.generate(x, max_new_tokens=max_new, do_sample=False, eos_token_id=eos, pad_token_id=eos, **kw)
    return out[0, len(prompt):].tolist(), time.perf_counter() - t0 - t_first


def spread(items: list, n: int) -> list:
    """n items evenly spaced over the list, first included (all of it when n >= its length).
    Datagen writes samples shortest answer first, so the first n would be the n shortest."""
    if n < 1:
        raise ValueError(f"--n {n}: expected at least one prompt per source")
    if n >= len(items):
        return list(items)
    return [items[i * len(items) // n] for i in range(n)]


def timed_pass(plain_core, spec_cores: dict[str, object], hf, by_source: dict[str, list[list[int]]],
                configs: list, bases: dict[str, Speculation], args: argparse.Namespace,
                eos: int) -> dict[str, dict]:
    """One timed pass: per source, per configuration ("plain", each config, "hf", "lookup"),
    its totals. Interleaved per prompt (plain, every spec config, transformers, prompt-lookup),
    so a machine that slows down or speeds up mid-run shifts every configuration alike.
    `bases`: each spec core's own speculation (`config_states`)."""
    out = {}
    for source, prompts in sorted(by_source.items()):
        acc = {name: ConfigTotals() for name in ["plain", *configs, "hf", "lookup"]}
        # fresh per-config step times
        states = config_states(configs, bases, plain_core.cfg.max_batch)
        for p in prompts:
            runs = engine_runs(plain_core, spec_cores, p, args.max_new_tokens, states)
            for name, r in zip(["plain", *configs], runs, strict=True):
                acc[name].add(*r)
            if hf is not None:
                acc["hf"].add(*run_hf(hf, p, args.max_new_tokens, eos, None))
                acc["lookup"].add(*run_hf(hf, p, args.max_new_tokens, eos, args.lookup_tokens))
        out[source] = acc
    return out


def merged(accs: list[ConfigTotals]) -> ConfigTotals:
    """One configuration's totals over several passes."""
    m = ConfigTotals()
    for a in accs:
        m.tokens += a.tokens
        m.secs, m.steps, m.committed = m.secs + a.secs, m.steps + a.steps, m.committed + a.committed
    return m
