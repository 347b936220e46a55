"""`turnspec speculator eval`: offline greedy tau of a drafter on one or more sample sets, at one
or more block sizes, with one load of the target and the drafter (tau.py holds the replay
itself)."""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from turnspec.speculator.tau import format_interval

if TYPE_CHECKING:
    from turnspec.engine.drafter.model import DFlashDrafter
    from turnspec.speculator.data import Sample
    from turnspec.speculator.target import FrozenTarget


def load_for_replay(drafter: str | Path, model_dir: str | None,
                    device: str) -> tuple[DFlashDrafter, FrozenTarget]:
    """The drafter and the frozen target as the offline replay runs them (bf16 on CUDA, fp32
    elsewhere); `model_dir` None: the default target."""
    import torch

    from turnspec.engine.drafter import load_drafter
    from turnspec.engine.local.args import resolve_model_dir
    from turnspec.speculator.target import FrozenTarget
    from turnspec.speculator.train_io import resolve_device

    dev = resolve_device(device)
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    model = load_drafter(drafter, device=dev, dtype=dtype)
    target = FrozenTarget.from_model_dir(model_dir or resolve_model_dir(None),
                                         model.config.target_layer_ids, dev, dtype)
    return model, target


def source_turns(path: Path, source: str, n: int) -> list[Sample]:
    """`n` held-out turns spread over one split of a samples file or folder (eval's names, e.g.
    "independent-generic"), for the analysis scripts that replay one split."""
    from turnspec.speculator.data import read_samples
    from turnspec.speculator.train_io import eval_splits

    splits = eval_splits(read_samples(path), n)
    if source not in splits:
        raise ValueError(f"source {source!r}: not in {path}; expected one of {sorted(splits)}")
    return splits[source]


def add_replay_arguments(p: argparse.ArgumentParser, source: str, n: int) -> None:
    """The options every script that replays one split takes (scripts/analysis/lookup_oracle.py,
    miss_rank.py): SAMPLES, --source, --n, --drafter, --block-size, --device, --json."""
    p.add_argument("samples", type=Path, help="datagen samples (a samples.jsonl or its folder)")
    p.add_argument("--source", default=source, help="split to replay (eval's names)")
    p.add_argument("--n", type=int, default=n, help="turns, spread over the split")
    p.add_argument("--drafter", default="default")
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--device", default="cpu")
    p.add_argument("--json", type=Path, default=None)


def replay_inputs(args: argparse.Namespace) -> tuple[list[Sample], DFlashDrafter, FrozenTarget]:
    """`add_replay_arguments`' options -> the turns, the drafter and the target (a split that is
    not there exits with the splits that are)."""
    try:
        turns = source_turns(args.samples, args.source, args.n)
    except ValueError as e:
        raise SystemExit(f"--source: {e}") from None
    return (turns, *load_for_replay(args.drafter, None, args.device))


def evaluate_sets(data: list[Path], *, drafter: str, model_dir: str,
                  block_sizes: Sequence[int] | None, samples: int, max_len: int, device: str,
                  with_train: bool, json_out: list[Path] | None,
                  lookup: bool = False, branches: int = 1,
                  plan: str = "first", datastore: Path | None = None) -> Iterator[list[dict]]:
    """Score each set's held-out splits (and a train sample with `with_train`) at each block
    size (None: the drafter's trained one); yields each set's results, one dict per block size
    ({"block_size", "tau": {split: tau}, "eval": {split: TauResult dict}}), as soon as the set
    is scored, and writes `json_out[i]` then, if given: that dict for one block size, else
    {"block_sizes", "by_block": {"8": ..., "16": ...}}. The target runs once per batch for all
    block sizes (`evaluate_tau_runs`). `lookup`: each split is scored a second time with
    prompt lookup, as split "NAME+lookup", from the same target pass; with `branches` > 1 as
    the engine's multi-branch verify serves it, split "NAME+lookup+3br" (for 3), or
    "NAME+lookup+3br+planned" with `plan` "planned" (`--spec-branch-plan`), and "+ds" with a
    `datastore` (`--spec-datastore`: the last branch drafts from the target's earlier answers)."""
    from turnspec.engine.spec.proposers.datastore import TokenDatastore, read_answers
    from turnspec.speculator.tau import evaluate_tau_runs
    from turnspec.speculator.train_io import RunLog

    check_replay_settings(branches, plan, datastore is not None, lookup)
    if json_out is not None and len(json_out) != len(data):
        raise ValueError(f"json_out: expected one path per data set ({len(data)}), got "
                         f"{len(json_out)}")
    # every set's splits before any model loads: a set with nothing to score fails now
    sets = [scored_splits(path, samples, with_train) for path in data]
    store = None
    if datastore is not None:  # read once: for the store and for the check against the scored
        answers = list(read_answers(datastore))
        store = TokenDatastore.from_answers(answers, datastore)
        no_scored_answers_in(datastore, answers, [s for splits in sets for seqs in splits.values()
                                                   for s in seqs if s.split != "train"])
    model, target = load_for_replay(drafter, model_dir, device)
    dev = target.device
    blocks = tuple(block_sizes) if block_sizes else (model.config.block_size,)
    lookups = (False, True) if lookup else (False,)
    batch = 128 if dev.type == "cuda" else 16
    log = RunLog(None, echo=True)
    for i, (path, splits) in enumerate(zip(data, sets, strict=True)):
        results: dict[int, dict[str, dict]] = {b: {} for b in blocks}
        for name, seqs in splits.items():
            t = time.perf_counter()
            for (b, lk), r in evaluate_tau_runs(model, target, seqs, blocks, lookups,
                                                batch_size=batch, max_len=max_len,
                                                branches=branches, plan=plan,
                                                datastore=store).items():
                label = f"{name}+lookup{branch_suffix(branches, plan, store is not None)}" if lk else name
                results[b][label] = r.to_dict()
                log(f"tau[{label}, B={b}] = {r.tau:.3f} (90% CI {format_interval(r.ci90)}) "
                    f"over {r.steps} steps, {r.samples} samples")
            log(f"{name}: {time.perf_counter() - t:.1f}s")
        outs = [{"drafter": str(drafter), "data": str(path), "block_size": b,
                 "tau": {k: v["tau"] for k, v in res.items()}, "eval": res}
                for b, res in results.items()]
        if json_out is not None:
            doc = outs[0] if len(outs) == 1 else {
                "drafter": str(drafter), "data": str(path), "block_sizes": list(blocks),
                "by_block": {str(o["block_size"]): o for o in outs}}
            json_out[i].write_text(json.dumps(doc, indent=2) + "\n")
        yield outs


def check_replay_settings(branches: int, plan: str, datastore: bool, lookup: bool) -> None:
    """The replay's branch settings, refused as the engine would refuse them."""
    from turnspec.engine.spec.options import MAX_BRANCHES
    from turnspec.engine.spec.swaps import BRANCH_PLANS

    if not 1 <= branches <= MAX_BRANCHES:
        raise ValueError(f"branches={branches}: expected 1..{MAX_BRANCHES}, as the engine "
                         "serves (--spec-branches)")
    if plan not in BRANCH_PLANS:
        raise ValueError(f"plan={plan!r}: expected one of {BRANCH_PLANS}")
    if datastore and branches < 2:
        raise ValueError(f"datastore: its block rides as a verify branch; expected branches >= 2, "
                         f"got {branches}")
    if branches > 1 and not lookup:
        raise ValueError(f"branches={branches}: expected lookup too (the engine's verify "
                         "branches ride on its lookup rule)")


def scored_splits(path: Path, samples: int, with_train: bool) -> dict[str, list[Sample]]:
    """The held-out splits of one samples file or folder (`eval_splits`); none is an error that
    says what the file holds."""
    from turnspec.speculator.data import read_samples
    from turnspec.speculator.train_io import eval_splits

    samples_in = read_samples(path)
    splits = eval_splits(samples_in, samples, with_train=with_train)
    if not splits:
        found = Counter(f"{s.source}/{s.split}" for s in samples_in)
        raise ValueError(f"{path}: no held-out turns to score (found {dict(found)}); expected "
                         "held-out samples (datagen's held-out conversations, or "
                         "--eval-set), or pass --with-train")
    return splits


def no_scored_answers_in(datastore: Path, answers: list[list[int]], scored: list[Sample]) -> None:
    """A datastore (`answers`, read from `datastore`) that holds any scored turn's answer would
    hand the replay that answer: it is refused, naming how many (a store built from a datagen
    run's samples.jsonl holds its held-out turns too; keep its train split only)."""
    from turnspec.engine.spec.proposers.datastore import answer_spans

    stored = {tuple(a) for a in answers}
    leaked = sum(any(tuple(a) in stored for a in answer_spans(s.input_ids, s.loss_mask))
                 for s in scored)
    if leaked:
        raise ValueError(f"datastore {datastore}: holds the answers of {leaked} of the "
                         f"{len(scored)} held-out turns scored; expected a store without them "
                         "(keep the train split of a datagen run's samples.jsonl)")


def branch_suffix(branches: int, plan: str, datastore: bool = False) -> str:
    """A split label's tail for the verify branches it was scored with: "" for one, "+3br" for
    three whose first drafts are swapped ("first"), "+3br+planned" for three planned (the
    engine's default plan), then "+ds" with a datastore branch."""
    if branches < 2:
        return ""
    return f"+{branches}br" + ("" if plan == "first" else f"+{plan}") + ("+ds" if datastore else "")


def tau_table(outs: list[dict]) -> str:
    """One set's results as a fixed-width table: a row per split, a column per block size
    (tau and its 90% interval over turns), and the turns scored."""
    splits = list(dict.fromkeys(k for o in outs for k in o["eval"]))
    head = f"{'split':28}" + "".join(f"{'B=' + str(o['block_size']):>20}" for o in outs) + \
        f"{'turns':>7}"
    lines = [head]
    for name in splits:
        cells = ""
        for o in outs:
            r = o["eval"].get(name)
            cells += f"{r['tau']:>7.2f} ({format_interval(r['ci90'])})" if r else f"{'-':>20}"
        turns = next(o["eval"][name]["samples"] for o in outs if name in o["eval"])
        lines.append(f"{name:28}{cells}{turns:>7}")
    return "\n".join(lines)
