"""Parallel training-data loading gives what read_samples + PackedSplit.build give."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch

from turnspec.speculator import data_load
from turnspec.speculator.data import PackedSplit, Sample, read_samples
from turnspec.speculator.data_load import load_train_data, load_workers
from turnspec.speculator.train import TrainConfig

MAX_LEN = 40


def _samples(n: int, seed: int) -> list[Sample]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        prompt, resp = rng.randint(1, 45), rng.randint(0, 12)     # some past MAX_LEN, some < 2
        ids = tuple(rng.randrange(50_000) for _ in range(prompt + resp))
        out.append(Sample(f"s{i}", "heldout" if rng.random() < 0.15 else "train",
                          rng.choice(["tools", "synthetic", "generic"]), ids,
                          (0,) * prompt + (1,) * resp))
    return out


def _write(path: Path, samples: list[Sample], torn: bool = False) -> Path:
    text = "".join(s.to_json() + "\n" for s in samples)
    path.write_text(text + ('{"id": "torn", "split": "tr' if torn else ""))
    return path


def _counts(samples: list[Sample]) -> dict:
    out: dict[str, dict[str, int]] = {}
    for s in samples:
        c = out.setdefault(f"{s.source}-{s.split}", {"sequences": 0, "response_tokens": 0})
        c["sequences"] += 1
        c["response_tokens"] += sum(s.loss_mask)
    return dict(sorted(out.items()))


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("sources", [None, ("tools", "synthetic")])
def test_same_packing_as_the_serial_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         workers: int, sources: tuple[str, ...] | None) -> None:
    monkeypatch.setattr(data_load, "CHUNK_LINES", 37)            # many chunks, a short last one
    path = _write(tmp_path / "samples.jsonl", _samples(300, seed=workers), torn=True)
    samples = read_samples(path)
    want = PackedSplit.build([s for s in samples if s.split == "train"
                              and (sources is None or s.source in sources)], MAX_LEN, "cpu")
    got = load_train_data(tmp_path, MAX_LEN, "cpu", sources, workers)
    assert torch.equal(got.train.ids, want.ids)
    assert torch.equal(got.train.loss_mask, want.loss_mask)
    assert (got.train.lengths, got.train.spans, got.train.truncated) == \
        (want.lengths, want.spans, want.truncated)
    assert want.truncated > 0 and len(want) < sum(s.split == "train" for s in samples)
    assert got.heldout == [s for s in samples if s.split == "heldout"]
    assert got.counts == _counts(samples)
    kept = [s for s in samples if s.split == "train" and (sources is None or s.source in sources)
            and sum(s.loss_mask[:MAX_LEN]) >= 2]
    rows = got.train_rows([0, 5, len(kept) - 1])
    assert [(r.id, r.source) for r in rows] == [(kept[i].id, kept[i].source) for i in (0, 5, -1)]
    assert rows[2].input_ids == kept[-1].input_ids[:MAX_LEN]
    assert rows[2].loss_mask == kept[-1].loss_mask[:MAX_LEN]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_bad_record_fails_loudly(tmp_path: Path, workers: int) -> None:
    good = _samples(20, seed=3)
    bad = good[4].to_json().replace('"loss_mask":[', '"loss_mask":[1,')   # one mask value more
    (tmp_path / "samples.jsonl").write_text("".join(s.to_json() + "\n" for s in good[:4])
                                            + bad + "\n")
    with pytest.raises(ValueError, match="expected equal lengths"):
        load_train_data(tmp_path, MAX_LEN, "cpu", None, workers)


def test_no_train_rows_and_bad_arguments(tmp_path: Path) -> None:
    held = [Sample("h", "heldout", "tools", (1, 2, 3), (0, 1, 1))]
    _write(tmp_path / "samples.jsonl", held)
    with pytest.raises(ValueError, match=">= 2 response tokens"):
        load_train_data(tmp_path, MAX_LEN, "cpu")
    with pytest.raises(ValueError, match="workers >= 1"):
        load_train_data(tmp_path, MAX_LEN, "cpu", workers=0)
    with pytest.raises(FileNotFoundError, match="datagen"):
        load_train_data(tmp_path / "nowhere", MAX_LEN, "cpu")
    with pytest.raises(ValueError, match="load_workers"):
        TrainConfig(data=tmp_path, model_dir=tmp_path, out=tmp_path, load_workers=0)


def test_workers_by_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path / "samples.jsonl", _samples(10, seed=4))
    assert load_workers(tmp_path) == 1                            # small: no worker processes
    assert load_workers(tmp_path, 3) == 3
    monkeypatch.setattr(data_load, "SMALL_FILE", 1)
    assert 1 <= load_workers(tmp_path) <= data_load.MAX_WORKERS
