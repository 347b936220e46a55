"""Training data loading across processes: parse the datagen JSONL in parallel, pack it once.

Training used to read every record into a `Sample` (two int tuples per sequence), then pack the
train split into padded tensors. On the H200 that took 131 s for 333,597 sequences,
single-threaded, with the GPU idle: ~16% of an 800 s budget
(docs/history/notes/run17-fast-load.md). Here worker processes parse chunks of lines (JSON
decoding is most of the cost) and hand back each chunk's train rows as padded int32 blocks,
which the parent copies into the split; only the held-out records (a few thousand, for the
evals) become `Sample`s. The packed result is the one `PackedSplit.build` gives for the same
records, row for row (tests/speculator/test_data_load.py).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import numpy as np
import torch

from turnspec.speculator.data import (
    PackedSplit,
    Sample,
    check_record,
    existing_samples_path,
    open_text,
    response_spans,
    samples_path,
    trainable,
)

CHUNK_LINES = 1024   # lines per task: ~8 MB of text at ~1,000 tokens a sequence
SMALL_FILE = 64 << 20  # below this a single process reads faster than spawning workers
MAX_WORKERS = 12


def load_workers(data: str | Path, requested: int | None = None) -> int:
    """Processes to parse `data` with: `requested`, or by its size (1 for a small file, else
    one per core up to MAX_WORKERS)."""
    if requested is not None:
        return requested
    path = samples_path(data)
    if not path.is_file() or path.stat().st_size < SMALL_FILE:
        return 1
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))


@dataclass(slots=True)
class _Chunk:
    """One chunk's train rows, padded to the chunk's own width, and its held-out Samples."""
    ids: np.ndarray                 # int32 [rows, width] (half the bytes back to the parent)
    mask: np.ndarray                # bool [rows, width]
    lengths: list[int]
    spans: list[int]                # first to last response token, per row
    names: list[tuple[str, str]]    # (id, source) per row
    truncated: int
    heldout: list[Sample]
    counts: dict[str, dict[str, int]]


def _parse(lines: list[str], max_len: int, sources: tuple[str, ...] | None) -> _Chunk:
    rows: list[tuple[list[int], list[int]]] = []
    names, heldout = [], []
    counts: dict[str, dict[str, int]] = {}
    truncated = 0
    for line in lines:
        if not line.endswith("\n"):
            continue                                 # a torn last line, as read_samples does
        d = json.loads(line)
        split, source = str(d["split"]), str(d["source"])
        t, m = d["input_ids"], d["loss_mask"]
        check_record(str(d["id"]), t, m)
        c = counts.setdefault(f"{source}-{split}", {"sequences": 0, "response_tokens": 0})
        c["sequences"] += 1
        c["response_tokens"] += sum(m)
        if split == "heldout":
            heldout.append(Sample(str(d["id"]), split, source, tuple(t), tuple(m)))
        elif split == "train" and (sources is None or source in sources):
            if not trainable(m, max_len):
                continue
            truncated += len(t) > max_len
            rows.append((t[:max_len], m[:max_len]))
            names.append((str(d["id"]), source))
    lengths = [len(t) for t, _ in rows]
    width = max(lengths, default=0)
    ids = np.zeros((len(rows), width), dtype=np.int32)
    mask = np.zeros((len(rows), width), dtype=np.bool_)
    for i, (t, m) in enumerate(rows):
        ids[i, : len(t)], mask[i, : len(m)] = t, m
    spans = response_spans(mask) if rows else []
    return _Chunk(ids, mask, lengths, spans, names, truncated, heldout, counts)


def _parse_task(task: tuple[list[str], int, tuple[str, ...] | None]) -> _Chunk:
    return _parse(*task)


def _chunks(path: Path) -> Iterator[list[str]]:
    with open_text(path) as f:
        while lines := list(islice(f, CHUNK_LINES)):
            yield lines


@dataclass(slots=True)
class TrainData:
    """What a training run reads: the packed train split, the held-out Samples, the counts."""
    train: PackedSplit
    train_names: list[tuple[str, str]]      # (sample id, source) per packed row
    heldout: list[Sample]
    counts: dict[str, dict[str, int]]       # per "source-split": sequences, response tokens

    def train_rows(self, rows: list[int]) -> list[Sample]:
        """Packed train rows back as Samples, cut at max_len as they were trained on (the
        final "train-sample" eval: rows spread over what was trained, after the source filter
        and the >= 2 response tokens rule; it used to spread over every train record)."""
        out = []
        for i in rows:
            n = self.train.lengths[i]
            name, source = self.train_names[i]
            out.append(Sample(name, "train", source,
                              tuple(self.train.ids[i, :n].tolist()),
                              tuple(int(v) for v in self.train.loss_mask[i, :n].tolist())))
        return out


def load_train_data(data: str | Path, max_len: int, device: torch.device | str,
                    sources: tuple[str, ...] | None = None, workers: int = 1) -> TrainData:
    """Read a datagen folder (or .jsonl[.xz|.gz]) with `workers` processes (1: in this one)."""
    if workers < 1:
        raise ValueError(f"load_train_data: expected workers >= 1, got {workers}")
    path = existing_samples_path(data)
    tasks = ((lines, max_len, sources) for lines in _chunks(path))
    if workers == 1:
        chunks = [_parse_task(t) for t in tasks]
    else:
        # spawn: the parent may already hold a CUDA context, which a forked child must not touch
        with mp.get_context("spawn").Pool(workers) as pool:
            chunks = list(pool.imap(_parse_task, tasks))
    return _assemble(chunks, max_len, device)


def _assemble(chunks: list[_Chunk], max_len: int, device: torch.device | str) -> TrainData:
    lengths = [n for c in chunks for n in c.lengths]
    if not lengths:
        raise ValueError(f"no train sample has >= 2 response tokens within max_len={max_len}")
    counts: dict[str, dict[str, int]] = {}
    for c in chunks:
        for k, v in c.counts.items():
            acc = counts.setdefault(k, {"sequences": 0, "response_tokens": 0})
            acc["sequences"] += v["sequences"]
            acc["response_tokens"] += v["response_tokens"]
    ids = np.zeros((len(lengths), max(lengths)), dtype=np.int64)     # pad id 0, as build's
    mask = np.zeros(ids.shape, dtype=np.bool_)
    r = 0
    for c in chunks:
        n, w = c.ids.shape
        ids[r : r + n, :w], mask[r : r + n, :w] = c.ids, c.mask
        r += n
    train = PackedSplit(torch.from_numpy(ids).to(device), torch.from_numpy(mask).to(device),
                        lengths, sum(c.truncated for c in chunks),
                        [s for c in chunks for s in c.spans])
    return TrainData(train, [s for c in chunks for s in c.names],
                     [s for c in chunks for s in c.heldout], dict(sorted(counts.items())))
