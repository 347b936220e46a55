"""Pin the embedded engine's speculative steps: each turn's greedy output and the tokens every
verify step committed, for a matrix of speculation settings, recorded once and checked later.

usage: python scripts/analysis/spec_pins.py record OUT.json.gz [--group ci|full]
       python scripts/analysis/spec_pins.py check PINS.json.gz [--config NAME] [--speculator DIR]

Why: a refactor of the spec path (proposers, planner, verify) must change nothing a request
sees, not even which step committed which token. The turns are real: the held-out turns
committed beside the default drafter (models/assets/smollm2-dflash/heldout.jsonl) and the
independent set as the H200 answered it (docs/gpu-runs/2026-12-04-copy-rule/
evalset-samples.jsonl.gz); SmolLM2 and the default drafter on the CPU, fp32.

Settings that would make a run depend on the machine or the clock are fixed: the policy is
"always" (the adaptive one reads step times), the GEMM is torch's (`--cpu-gemm auto` times the
candidates at load), and the drafter runs in fp32 (a CPU with bf16 dot products would run it in
bf16). Each configuration gets a fresh engine and the same arrival order, so the batches, and
with them the row cap's handout, are the same every run.

Group "full": the 64 committed held-out turns and 64 independent turns, 64 tokens each, every
configuration (hours on 2 busy cores). Group "ci": 1 turn a split, 48 tokens, two
configurations (tests/engine/local/test_spec_pins.py checks it, ~1 min). The full group's pins
are docs/cpu-runs/spec-pins-full.json.gz.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HELDOUT = ROOT / "models/assets/smollm2-dflash/heldout.jsonl"
INDEPENDENT = ROOT / "docs/gpu-runs/2026-12-04-copy-rule/evalset-samples.jsonl.gz"
STORE = ROOT / "models/assets/smollm2-dflash/heldout-run7.jsonl"  # the datastore configurations'

# name -> (verify branches, prompt lookup, datastore)
CONFIGS: dict[str, tuple[int, bool, bool]] = {
    "b1": (1, True, False), "b1-nolookup": (1, False, False),
    "b3": (3, True, False), "b3-nolookup": (3, False, False), "b3-ds": (3, True, True),
    "b16": (16, True, False), "b16-nolookup": (16, False, False), "b16-ds": (16, True, True),
}


@dataclass(frozen=True)
class Group:
    per_split: int     # turns of each split (held-out tools/generic, independent voice/generic)
    max_tokens: int
    configs: tuple[str, ...]


GROUPS = {"full": Group(32, 64, tuple(CONFIGS)), "ci": Group(1, 48, ("b1", "b16-ds"))}


def turns(per_split: int) -> list[tuple[str, list[int]]]:
    """(sample id, prompt token ids) of `per_split` turns of each split, in a fixed order."""
    import tempfile

    from turnspec.speculator.data import read_samples
    from turnspec.speculator.train_io import eval_splits

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "evalset-samples.jsonl"
        plain.write_bytes(gzip.decompress(INDEPENDENT.read_bytes()))
        for path, names in ((HELDOUT, ("tools-heldout", "generic-heldout")),
                            (plain, ("independent-voice", "independent-generic"))):
            splits = eval_splits(read_samples(path), per_split)
            for name in names:
                out += [(s.id, list(s.input_ids[: s.prompt_len])) for s in splits[name]]
    return out


@contextmanager
def fp32_drafter() -> Iterator[None]:
    """The engine as if this CPU had no bf16 dot products: the drafter runs in fp32 (every
    loaded engine module that asks `cpu_has_native_bf16` is told no)."""
    import turnspec.engine.local.core  # noqa: F401  (loads the modules that ask)

    patched = [m for name, m in list(sys.modules.items())
               if name.startswith("turnspec.engine") and hasattr(m, "cpu_has_native_bf16")]
    saved = [m.cpu_has_native_bf16 for m in patched]
    for m in patched:
        m.cpu_has_native_bf16 = lambda: False
    try:
        yield
    finally:
        for m, f in zip(patched, saved, strict=True):
            m.cpu_has_native_bf16 = f


def serve(model_dir: str, name: str, prompts: list[tuple[str, list[int]]],
          max_tokens: int, speculator: str = "default") -> dict[str, dict[str, list[int]]]:
    """One configuration's answers: sample id -> {"tokens", "steps"} (tokens each verify step
    committed)."""
    from turnspec.engine.local.config import LocalEngineConfig
    from turnspec.engine.local.core import EngineCore
    from turnspec.engine.protocol import GenerateRequest, SamplingParams

    branches, lookup, store = CONFIGS[name]
    cfg = LocalEngineConfig(model_dir=model_dir, speculator=speculator, spec_policy="always",
                            spec_lookup=lookup, spec_branches=branches, cpu_gemm="torch",
                            max_batch=16, spec_datastore=str(STORE) if store else None)
    with fp32_drafter():
        core = EngineCore(cfg)
    sampling = SamplingParams(max_tokens=max_tokens)
    for sid, ids in prompts:
        core.add(GenerateRequest(sid, ids, sampling))
    out: dict[str, dict[str, list[int]]] = {sid: {"tokens": [], "steps": []} for sid, _ in prompts}
    while core.has_work():
        for d in core.step():
            out[d.request_id]["tokens"] += d.token_ids
            if d.finished:
                if d.error:
                    raise RuntimeError(f"{name} {d.request_id}: {d.error}")
                out[d.request_id]["steps"] = list(d.spec.step_lengths) if d.spec else []
    return out


def run_group(group: str, configs: tuple[str, ...] | None = None,
              speculator: str = "default") -> dict:
    """{"group", "max_tokens", "turns": {id: tokens}, "steps": {config: {id: steps}}}; every
    configuration must give the same tokens (greedy speculation is lossless)."""
    from turnspec.engine.local.args import resolve_model_dir

    g = GROUPS[group]
    prompts = turns(g.per_split)
    model_dir = resolve_model_dir(None)
    tokens: dict[str, list[int]] = {}
    steps: dict[str, dict[str, list[int]]] = {}
    for name in configs or g.configs:
        got = serve(model_dir, name, prompts, g.max_tokens, speculator)
        for sid, r in got.items():
            if tokens.setdefault(sid, r["tokens"]) != r["tokens"]:
                raise RuntimeError(f"{name} {sid}: other tokens than an earlier configuration's")
        steps[name] = {sid: r["steps"] for sid, r in got.items()}
        print(f"{name}: {sum(map(len, steps[name].values()))} verify steps, "
              f"{sum(len(r['tokens']) for r in got.values())} tokens", flush=True)
    return {"group": group, "max_tokens": g.max_tokens, "turns": tokens, "steps": steps}


def differences(pinned: dict, got: dict) -> list[str]:
    """What `got` (run_group's) does differently from `pinned`, one line a turn and config."""
    out = []
    for sid, toks in got["turns"].items():
        if pinned["turns"].get(sid) != toks:
            out.append(f"{sid}: tokens differ")
    for name, per_turn in got["steps"].items():
        for sid, st in per_turn.items():
            if pinned["steps"][name].get(sid) != st:
                out.append(f"{name} {sid}: steps {st} != pinned {pinned['steps'][name].get(sid)}")
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("cmd", choices=("record", "check"))
    p.add_argument("pins", type=Path)
    p.add_argument("--group", choices=tuple(GROUPS), default="full")
    p.add_argument("--config", action="append", default=None, help="check only these")
    p.add_argument("--speculator", default="default",
                   help="the drafter folder (default: the committed one; a copy of it where the "
                        "tree's must leave, as for a GPU carry)")
    args = p.parse_args()
    if args.cmd == "record":
        doc = run_group(args.group, speculator=args.speculator)
        args.pins.write_bytes(gzip.compress(json.dumps(doc).encode()))
        print(f"wrote {args.pins}")
        return
    pinned = json.loads(gzip.decompress(args.pins.read_bytes()))
    diff = differences(pinned, run_group(pinned["group"], tuple(args.config or ()) or None,
                                         args.speculator))
    print("\n".join(diff) if diff else "identical to the pins")
    sys.exit(1 if diff else 0)


if __name__ == "__main__":
    main()
