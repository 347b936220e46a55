"""Drafter training data: the datagen JSONL, and its packed on-device form.

One record per line: {"id", "split", "source", "input_ids", "loss_mask"}; loss_mask is 1 on
the tokens the target generated (the response, final EOS included) and 0 on the prompt.
Training keeps the whole split on the device as padded tensors and batches by similar length,
so a step moves nothing across the bus.
"""

from __future__ import annotations

import gzip
import json
import lzma
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import IO, NamedTuple

import numpy as np
import torch
from torch import Tensor

SAMPLES_FILE = "samples.jsonl"
_INT_TEXT: dict[int, str] = {}   # 0..2**18-1 -> decimal text, filled on first use


def join_ints(sep: str, values: Iterable[int]) -> str:
    """`sep.join(map(str, values))`, the same text ~3x faster: the decimal forms of ids below
    2**18 (every token id of SmolLM2's 49,152 and Qwen's 151,936) are looked up, not formatted
    (a rebuild writes ~100M of them); any other int falls back to str()."""
    if not _INT_TEXT:
        _INT_TEXT.update((i, str(i)) for i in range(1 << 18))
    values = values if isinstance(values, (tuple, list)) else tuple(values)
    try:
        return sep.join(map(_INT_TEXT.__getitem__, values))
    except KeyError:
        return sep.join(map(str, values))


def check_record(sid: str, input_ids: Sequence[int], loss_mask: Sequence[int]) -> None:
    """A sample's ids and loss mask: equal lengths, the mask 0/1 only (raises ValueError)."""
    if len(input_ids) != len(loss_mask):
        raise ValueError(f"sample {sid}: input_ids has {len(input_ids)} tokens but "
                         f"loss_mask {len(loss_mask)}; expected equal lengths")
    if not set(loss_mask) <= {0, 1}:  # set(): C speed, ~130k samples are read per run
        raise ValueError(f"sample {sid}: loss_mask must hold only 0/1")


def trainable(loss_mask: Sequence[int], max_len: int) -> bool:
    """Whether a train sample is packed: >= 2 response tokens within max_len."""
    return sum(loss_mask[:max_len]) >= 2


def response_spans(mask: np.ndarray) -> list[int]:
    """Per row of a padded bool loss mask [n, width] (each row with a response token): the span
    from its first to its last response token."""
    return (mask.shape[1] - mask[:, ::-1].argmax(1) - mask.argmax(1)).tolist()


@dataclass(slots=True, frozen=True)
class Sample:
    id: str
    split: str          # "train" | "heldout"
    source: str         # "tools" | "generic"
    input_ids: tuple[int, ...]
    loss_mask: tuple[int, ...]

    def __post_init__(self) -> None:
        check_record(self.id, self.input_ids, self.loss_mask)

    @property
    def prompt_len(self) -> int:
        """Position of the first target-generated token (the first anchor online)."""
        for i, m in enumerate(self.loss_mask):
            if m:
                return i
        return len(self.loss_mask)

    def to_json(self) -> str:
        # json.dumps(..., separators=(",", ":")) of the same dict, byte for byte, with the two
        # int lists joined directly (~2x faster; datagen and rebuilds write ~100k samples a seed)
        return (f'{{"id":{json.dumps(self.id)},"split":{json.dumps(self.split)},'
                f'"source":{json.dumps(self.source)},'
                f'"input_ids":[{join_ints(",", self.input_ids)}],'
                f'"loss_mask":[{join_ints(",", self.loss_mask)}]}}')

    @classmethod
    def from_json(cls, line: str) -> Sample:
        d = json.loads(line)
        return cls(id=str(d["id"]), split=str(d["split"]), source=str(d["source"]),
                   input_ids=tuple(d["input_ids"]), loss_mask=tuple(d["loss_mask"]))


def copied_share(sample: Sample, n: int = 4) -> float:
    """Share of the response's tokens that lie in an n-token span also found in the prompt: how
    much of the target's answer is a copy from its context (a readback, a replayed tool result).
    Earlier drafters drafted such answers worst (docs/history/notes/drafter-run6-workload.md)."""
    p = sample.prompt_len
    prompt, resp = sample.input_ids[:p], sample.input_ids[p:]
    grams = {prompt[i:i + n] for i in range(len(prompt) - n + 1)}
    covered = [False] * len(resp)
    for i in range(len(resp) - n + 1):
        if resp[i:i + n] in grams:
            covered[i:i + n] = [True] * n
    return sum(covered) / len(resp) if resp else 0.0


def open_text(path: str | Path, mode: str = "rt") -> IO[str]:
    """A text file, through xz or gzip when its name ends in .xz / .gz (data committed to the
    repo is xz: 3.0 MB for the seed-7 completions against 4.7 MB gzipped)."""
    p = Path(path)
    if p.suffix == ".xz":
        if "w" in mode:
            return lzma.open(p, mode, preset=9, encoding="utf-8")
        return lzma.open(p, mode, encoding="utf-8")
    if p.suffix == ".gz":
        return gzip.open(p, mode, encoding="utf-8")
    return p.open(mode[0], encoding="utf-8")


def samples_path(data: str | Path) -> Path:
    p = Path(data)
    return p / SAMPLES_FILE if p.is_dir() else p


def existing_samples_path(data: str | Path) -> Path:
    """`samples_path`, raising FileNotFoundError when there is no such file."""
    path = samples_path(data)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: expected the JSONL written by `turnspec speculator "
                                "datagen`")
    return path


def read_samples(data: str | Path) -> list[Sample]:
    """All records of a datagen folder (or a .jsonl file, plain, .xz or .gz); a torn last line
    is skipped."""
    path = existing_samples_path(data)
    out = []
    with open_text(path) as f:
        for line in f:
            if line.endswith("\n"):
                out.append(Sample.from_json(line))
    return out


def data_summary(data: str | Path, counts: dict[str, dict[str, int]]) -> dict:
    """Counts per source/split (sequences, response tokens) plus datagen's meta.json."""
    meta_path = samples_path(data).parent / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    return {"counts": dict(sorted(counts.items())), "datagen": meta}


class Batch(NamedTuple):
    """One training step's sequences; the ints are known on the host (no device sync)."""
    rows: Tensor        # [b] int64 row indices on the device
    width: int          # columns to slice: the longest length, rounded up (batches())
    tokens: int         # real tokens in the batch
    response_span: int  # the batch's widest span from a row's first to last response token


@dataclass(slots=True)
class PackedSplit:
    """Samples as padded device tensors. ids [N, S] int64, loss_mask [N, S] bool, the lengths
    on the host (for batching without syncs), and per row the span from its first to its last
    response token (host; soft labels run the target's LM head over that window only)."""
    ids: Tensor
    loss_mask: Tensor
    lengths: list[int]
    truncated: int
    spans: list[int]

    @classmethod
    def build(cls, samples: list[Sample], max_len: int, device: torch.device | str,
              pad_id: int = 0) -> PackedSplit:
        """Right-truncate to max_len (the target is causal, so the kept prefix is exact)."""
        keep = [s for s in samples if trainable(s.loss_mask, max_len)]
        if not keep:
            raise ValueError(f"no sample has >= 2 response tokens within max_len={max_len} "
                             f"(of {len(samples)} samples)")
        lengths = [min(len(s.input_ids), max_len) for s in keep]
        n, width, total = len(keep), max(lengths), sum(lengths)
        # One flat read of every kept token, then one scatter into the padded matrix: a
        # torch.tensor() per row took 6.7 s for 45k samples on the dev CPU, this 3.0 s.
        pairs = list(zip(keep, lengths, strict=True))
        flat_ids = np.fromiter(chain.from_iterable(s.input_ids[:k] for s, k in pairs),
                               dtype=np.int64, count=total)
        flat_mask = np.fromiter(chain.from_iterable(s.loss_mask[:k] for s, k in pairs),
                                dtype=np.bool_, count=total)
        real = np.arange(width)[None, :] < np.asarray(lengths)[:, None]  # row-major = flat order
        ids = np.full((n, width), pad_id, dtype=np.int64)
        mask = np.zeros((n, width), dtype=np.bool_)
        ids[real], mask[real] = flat_ids, flat_mask
        truncated = sum(len(s.input_ids) > max_len for s in keep)
        return cls(torch.from_numpy(ids).to(device), torch.from_numpy(mask).to(device), lengths,
                   truncated, response_spans(mask))

    def __len__(self) -> int:
        return len(self.lengths)

    def num_tokens(self) -> int:
        return sum(self.lengths)

    def batches(self, batch_size: int, generator: torch.Generator,
                width_multiple: int = 1) -> Iterator[Batch]:
        """One epoch: shuffled batches of similar length, each as wide as its longest row
        rounded up to width_multiple columns (the padding carries no loss and sits after every
        row's anchors). On CUDA each new width costs ~0.11 s once (the H200 step time fits
        0.22 s + 0.11 s per width not seen before; SDPA's cuDNN kernels are planned per shape),
        ~855 widths and ~97 s of an 880 s budget; a multiple of 32 leaves at most 64, and training
        then ran 4.4-4.7 steps/s from its first 100 steps (~3.0 there before; notes
        docs/history/notes/run17-fast-load.md, docs/history/notes/run18-lower-lr.md)."""
        if width_multiple < 1:
            raise ValueError(f"width_multiple: expected >= 1, got {width_multiple}")
        order = torch.randperm(len(self), generator=generator).tolist()
        # Sort within windows of 32 batches: little padding, still random across an epoch.
        win = 32 * batch_size
        groups = []
        for w in range(0, len(order), win):
            chunk = sorted(order[w : w + win], key=lambda i: self.lengths[i])
            groups += [chunk[j : j + batch_size] for j in range(0, len(chunk), batch_size)]
        plan = [groups[g] for g in torch.randperm(len(groups), generator=generator).tolist()]
        # One upload per epoch: a per-step torch.tensor(..., device=cuda) would sync the host.
        flat = torch.tensor([i for rows in plan for i in rows], device=self.ids.device)
        start = 0
        for rows in plan:
            lens = [self.lengths[i] for i in rows]
            width = min(-(-max(lens) // width_multiple) * width_multiple, self.ids.shape[1])
            yield Batch(flat[start : start + len(rows)], width, sum(lens),
                        max(self.spans[i] for i in rows))
            start += len(rows)
