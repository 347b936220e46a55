"""Drafter training data: prompts answered by the target, saved with loss masks.

The paper regenerates every response with the target (reference/dflash.md §2): the drafter
must learn the target's own distribution, not a dataset's. `answer` is injected (the CLI wires
the local engine's greedy `generate_batch`; speculator never imports engine). Output is one
JSONL record per prompt (see data.py), appended batch by batch: an interrupted run resumes
where it stopped, skipping ids already written.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from turnspec.speculator.data import SAMPLES_FILE, Sample

AnswerFn = Callable[[list[list[int]]], list[list[int]]]
SPLITS = ("train", "heldout")


@dataclass(slots=True, frozen=True)
class PromptItem:
    id: str
    split: str                    # "train" | "heldout"
    source: str                   # "tools" | "generic" | "readback" | "dictation" | "synthetic"
    prompt_ids: tuple[int, ...]   # the rendered chat prompt, generation prompt included

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise ValueError(f"prompt {self.id}: split={self.split!r}, expected one of {SPLITS}")
        if not self.prompt_ids:
            raise ValueError(f"prompt {self.id}: empty prompt_ids")


def done_ids(out_dir: Path) -> set[str]:
    """Ids already written; a torn last line (killed mid-write) is cut off the file."""
    path = out_dir / SAMPLES_FILE
    if not path.is_file():
        return set()
    data = path.read_bytes()
    keep = data.rfind(b"\n") + 1
    if keep != len(data):
        with path.open("r+b") as f:
            f.truncate(keep)
    return {json.loads(line)["id"] for line in data[:keep].decode().splitlines() if line}


def batch_plan(items: Sequence[PromptItem], batch_size: int,
               seed: int = 0) -> list[list[PromptItem]]:
    """Batches of similar length (less padding in the engine) within one (source, split), in a
    seeded order stratified by group: every group's first batch runs before any group's
    second, and after any prefix of the plan each group has run about the same fraction of
    its batches. (A plain shuffle is not enough: a small group, e.g. the ~50 generic prompts
    of one datagen shard, fits in one batch, and a budget-cut run can miss it entirely.)"""
    if batch_size < 1:
        raise ValueError(f"batch_size: expected >= 1, got {batch_size}")
    rng = random.Random(seed)
    groups: dict[tuple[str, str], list[PromptItem]] = {}
    for it in items:
        groups.setdefault((it.source, it.split), []).append(it)
    keyed: list[tuple[float, float, list[PromptItem]]] = []
    for key in sorted(groups):
        group = sorted(groups[key], key=lambda it: len(it.prompt_ids))
        batches = [group[i : i + batch_size] for i in range(0, len(group), batch_size)]
        rng.shuffle(batches)
        keyed += [(k / len(batches), rng.random(), b) for k, b in enumerate(batches)]
    keyed.sort(key=lambda t: t[:2])
    return [b for _, _, b in keyed]


def generate_dataset(items: Sequence[PromptItem], answer: AnswerFn, out_dir: str | Path, *,
                     batch_size: int = 64, progress: bool = True,
                     meta: dict | None = None, time_budget_s: float | None = None,
                     seed: int = 0) -> dict:
    """Answer every prompt not yet in out_dir/samples.jsonl; returns counts.

    Prompts go to `answer` in the batches of `batch_plan`, so a run stopped early
    (time_budget_s: no new batch starts after it; or a kill) still holds every source and
    split in proportion. Each record is prompt + completion with loss_mask 0 on the prompt and 1 on the completion (the
    completion's final EOS included, as the engine returns it).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ids = [it.id for it in items]
    if len(set(ids)) != len(ids):
        raise ValueError("generate_dataset: prompt ids must be unique")
    done = done_ids(out)
    todo = [it for it in items if it.id not in done]
    batches = batch_plan(todo, batch_size, seed)
    if meta is not None:
        (out / "meta.json").write_text(json.dumps({**meta, "prompts": len(items)}, indent=2))
    bar = tqdm(total=len(items), initial=len(items) - len(todo), desc="datagen",
               disable=not progress, dynamic_ncols=True)
    written = tokens = 0
    t0 = time.perf_counter()
    with (out / SAMPLES_FILE).open("a") as f:
        for batch in batches:
            if written and time_budget_s is not None and time.perf_counter() - t0 > time_budget_s:
                break
            completions = answer([list(it.prompt_ids) for it in batch])
            if len(completions) != len(batch):
                raise ValueError(f"answer returned {len(completions)} completions for "
                                 f"{len(batch)} prompts; expected one per prompt")
            lines = []
            for it, comp in zip(batch, completions, strict=True):
                comp = [int(t) for t in comp]
                s = Sample(id=it.id, split=it.split, source=it.source,
                           input_ids=it.prompt_ids + tuple(comp),
                           loss_mask=(0,) * len(it.prompt_ids) + (1,) * len(comp))
                lines.append(s.to_json() + "\n")
                tokens += len(comp)
            f.write("".join(lines))
            f.flush()
            os.fsync(f.fileno())
            written += len(batch)
            bar.update(len(batch))
            bar.set_postfix(tokens=tokens)
    bar.close()
    seconds = time.perf_counter() - t0
    return {"prompts": len(items), "skipped_done": len(items) - len(todo), "written": written,
            "response_tokens": tokens, "seconds": round(seconds, 1),
            "tokens_per_s": round(tokens / max(seconds, 1e-9))}
