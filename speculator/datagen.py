"""Drafter training data: prompts answered by the target, saved with loss masks.

The paper regenerates every response with the target (docs/drafter-training.md): the drafter
must learn the target's own distribution, not a dataset's. The target is injected (this module
needs no engine; datagen_run.py wires the local one in): `answer` takes one batch of prompts at a
time (the local engine's greedy `generate_batch`), `stream` pulls prompts as the engine has room and
yields each completion as it finishes (`generate_stream`: no batch tail, the CLI's default).
Output is one JSONL record per prompt (see data.py), appended as answers come: an interrupted
run resumes where it stopped, skipping ids already written.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from tqdm import tqdm

from turnspec.speculator.data import SAMPLES_FILE, Sample
from turnspec.tools_grammar.schema import ToolSpec

AnswerFn = Callable[[list[list[int]]], list[list[int]]]
# prompts (pulled lazily) -> (index into them, completion), in finishing order
StreamFn = Callable[[Iterable[list[int]]], Iterator[tuple[int, list[int]]]]
SPLITS = ("train", "heldout")


@dataclass(slots=True, frozen=True)
class PromptItem:
    id: str
    split: str                    # "train" | "heldout"
    source: str                   # "tools" | "generic" | "readback" | "dictation" | "synthetic"
    prompt_ids: tuple[int, ...]   # the rendered chat prompt, generation prompt included
    tools: tuple[ToolSpec, ...] = ()  # the tools rendered into it (datagen --tool-grammar)

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


def conversation_key(item_id: str) -> str:
    """The call a prompt comes from: ids are "<conversation>:<turn>" (readbacks
    "<conversation>:readback:<turn>"), so the part before the first ':'; an id without one is
    its own unit."""
    return item_id.split(":", 1)[0]


def batch_plan(items: Sequence[PromptItem], batch_size: int,
               seed: int = 0) -> list[list[PromptItem]]:
    """Batches within one (source, split), whole conversations per batch, in a seeded order
    stratified by group: every group's first batch runs before any group's second, and after
    any prefix of the plan each group has run about the same fraction of its batches. (A plain
    shuffle is not enough: a small group, e.g. the ~50 generic prompts of one datagen shard,
    fits in one batch, and a budget-cut run can miss it entirely.)

    Whole conversations: turn k+1's prompt extends turn k's, and a synthetic call's system
    prompt and tools are its own, so a call's turns share most of their prefill only when one
    engine call holds them all (its KV pool keeps the batch's blocks; a later batch evicts
    them). Conversations are packed in order of their longest prompt, so batches stay of
    similar length (less padding), and each batch runs in waves of turns (see below)."""
    if batch_size < 1:
        raise ValueError(f"batch_size: expected >= 1, got {batch_size}")
    rng = random.Random(seed)
    groups: dict[tuple[str, str], list[PromptItem]] = {}
    for it in items:
        groups.setdefault((it.source, it.split), []).append(it)
    keyed: list[tuple[float, float, list[PromptItem]]] = []
    for key in sorted(groups):
        convs: dict[str, list[PromptItem]] = {}
        for it in groups[key]:
            convs.setdefault(conversation_key(it.id), []).append(it)
        units = sorted(convs.values(), key=lambda u: (max(len(it.prompt_ids) for it in u), u[0].id))
        rank: dict[str, int] = {}                                  # turn order within its call
        for unit in units:
            unit.sort(key=lambda it: len(it.prompt_ids))
            rank.update((it.id, r) for r, it in enumerate(unit))
        batches: list[list[PromptItem]] = [[]]
        for unit in units:
            for i in range(0, len(unit), batch_size):              # a call longer than a batch
                part = unit[i : i + batch_size]
                if len(batches[-1]) + len(part) > batch_size:
                    batches.append([])
                batches[-1] += part
        # in waves: every call's first turn, then every second turn, ... (by length within a
        # wave), so a turn is admitted after the turn it extends has been prefilled
        batches = [sorted(b, key=lambda it: (rank[it.id], len(it.prompt_ids))) for b in batches if b]
        rng.shuffle(batches)
        keyed += [(k / len(batches), rng.random(), b) for k, b in enumerate(batches)]
    keyed.sort(key=lambda t: t[:2])
    return [b for _, _, b in keyed]


def generate_dataset(items: Sequence[PromptItem], answer: AnswerFn | None, out_dir: str | Path, *,
                     batch_size: int = 64, progress: bool = True,
                     meta: dict | None = None, time_budget_s: float | None = None,
                     seed: int = 0, stream: StreamFn | None = None,
                     more: Iterable[Sequence[PromptItem]] = ()) -> dict:
    """Answer every prompt not yet in out_dir/samples.jsonl; returns counts.

    Prompts go out in the order of `batch_plan`, so a run stopped early (time_budget_s: no
    prompt is handed out after it, and what the target already holds finishes: one batch, or
    a stream's in-flight prompts; or a kill) still holds every source and split in proportion.
    more: later parts of the prompts (a datagen renders them while `items` is answered); each
    is taken up when the one before it has gone out, and planned the same way on its own. A
    part not yet taken up when the budget runs out is never waited for (nor counted).
    Exactly one of `answer` (batch by batch) and `stream` (one prompt stream, completions as
    they finish) is given. Each record is prompt + completion with loss_mask 0 on the prompt and
    1 on the completion (the completion's final EOS included, as the engine returns it).
    """
    if (answer is None) == (stream is None):
        raise ValueError("generate_dataset: pass exactly one of answer= and stream=")
    run = _Run(Path(out_dir), batch_size=batch_size, seed=seed, meta=meta,
               time_budget_s=time_budget_s, progress=progress)
    with (run.out / SAMPLES_FILE).open("a") as f:
        def write(pairs: list[tuple[PromptItem, list[int]]]) -> None:
            run.write(f, pairs)

        if stream is not None:
            _run_stream(stream, (it for b in run.batches(items, more) for it in b), write,
                        run.over_budget, batch_size)
        else:
            assert answer is not None
            for batch in run.batches(items, more):
                if run.counts["written"] and run.over_budget():
                    break
                completions = answer([list(it.prompt_ids) for it in batch])
                if len(completions) != len(batch):
                    raise ValueError(f"answer returned {len(completions)} completions for "
                                     f"{len(batch)} prompts; expected one per prompt")
                write(list(zip(batch, completions, strict=True)))
    run.bar.close()
    seconds = time.perf_counter() - run.t0
    counts = run.counts
    return {"prompts": counts["prompts"], "skipped_done": counts["skipped_done"],
            "written": counts["written"], "response_tokens": counts["tokens"],
            "seconds": round(seconds, 1), "feed": "stream" if stream is not None else "batches",
            "tokens_per_s": round(counts["tokens"] / max(seconds, 1e-9))}


class _Run:
    """One generate_dataset call's state: what out_dir already holds, the ids seen, the
    counts, the progress bar and the clock the budget runs on."""

    def __init__(self, out: Path, *, batch_size: int, seed: int, meta: dict | None,
                 time_budget_s: float | None, progress: bool) -> None:
        self.out, self.batch_size, self.seed, self.meta = out, batch_size, seed, meta
        self.time_budget_s = time_budget_s
        out.mkdir(parents=True, exist_ok=True)
        self.done = done_ids(out)
        self.seen: set[str] = set()
        self.counts = {"written": 0, "tokens": 0, "prompts": 0, "skipped_done": 0}
        self.bar = tqdm(total=0, desc="datagen", disable=not progress, dynamic_ncols=True)
        self.t0 = time.perf_counter()

    def over_budget(self) -> bool:
        return (self.time_budget_s is not None
                and time.perf_counter() - self.t0 > self.time_budget_s)

    def take_up(self, part: Sequence[PromptItem]) -> list[list[PromptItem]]:
        """One part's batches, once its ids are checked and what is done is left out."""
        ids = {it.id for it in part}
        if len(ids) != len(part) or not ids.isdisjoint(self.seen):
            raise ValueError("generate_dataset: prompt ids must be unique")
        self.seen.update(ids)
        todo = [it for it in part if it.id not in self.done]
        self.counts["prompts"] += len(part)
        self.counts["skipped_done"] += len(part) - len(todo)
        if self.meta is not None:  # rewritten as parts come, so a killed run's meta is true too
            (self.out / "meta.json").write_text(
                json.dumps({**self.meta, "prompts": self.counts["prompts"]}, indent=2))
        self.bar.total += len(part)
        self.bar.update(len(part) - len(todo))
        return batch_plan(todo, self.batch_size, self.seed)

    def batches(self, items: Sequence[PromptItem],
                more: Iterable[Sequence[PromptItem]]) -> Iterator[list[PromptItem]]:
        yield from self.take_up(items)
        parts = iter(more)
        while not self.over_budget():  # checked before waiting for the next part
            part = next(parts, None)
            if part is None:
                return
            yield from self.take_up(part)

    def write(self, f: TextIO, pairs: list[tuple[PromptItem, list[int]]]) -> None:
        """Append the pairs as samples (loss on the completion only), flushed to disk."""
        lines = []
        for it, comp in pairs:
            comp = [int(t) for t in comp]
            s = Sample(id=it.id, split=it.split, source=it.source,
                       input_ids=it.prompt_ids + tuple(comp),
                       loss_mask=(0,) * len(it.prompt_ids) + (1,) * len(comp))
            lines.append(s.to_json() + "\n")
            self.counts["tokens"] += len(comp)
        f.write("".join(lines))
        f.flush()
        os.fsync(f.fileno())
        self.counts["written"] += len(pairs)
        self.bar.update(len(pairs))
        self.bar.set_postfix(tokens=self.counts["tokens"])


def _run_stream(stream: StreamFn, items: Iterator[PromptItem],
                write: Callable[[list[tuple[PromptItem, list[int]]]], None],
                over_budget: Callable[[], bool], flush_every: int) -> None:
    """Feed `items` to `stream` until the budget is over (at least one prompt), writing
    completions `flush_every` at a time (and what is left at the end)."""
    order: list[PromptItem] = []    # the prompts handed out, by the stream's index

    def prompts() -> Iterator[list[int]]:
        for it in items:
            if order and over_budget():
                return
            order.append(it)
            yield list(it.prompt_ids)

    pending: list[tuple[PromptItem, list[int]]] = []
    seen: set[int] = set()
    try:
        for i, comp in stream(prompts()):
            if not 0 <= i < len(order) or i in seen:
                raise ValueError(f"stream yielded index {i}: expected each prompt it was given "
                                 f"(0..{len(order) - 1}) once")
            seen.add(i)
            pending.append((order[i], comp))
            if len(pending) >= flush_every:
                write(pending)
                pending = []
    finally:  # what finished before a failure is kept (a resumed run skips it)
        if pending:
            write(pending)
