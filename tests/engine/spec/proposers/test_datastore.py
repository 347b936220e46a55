"""TokenDatastore: drafts from the target's earlier answers (the most frequent continuation of
the most specific match), and the answer files it reads."""

from __future__ import annotations

import gzip
import json
import lzma
import random
from collections import Counter
from pathlib import Path

import pytest

from turnspec.engine.spec.proposers.datastore import TokenDatastore, read_answers


def test_draft_takes_the_continuation_most_answers_took() -> None:
    store = TokenDatastore([[1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 7], [9, 2, 3, 4, 8, 8]])
    assert len(store) == 18 and store.answers == 3
    # after "2 3 4": two answers go on with 5, one with 8; after "5", one with 6, one with 7:
    # the tie keeps the earlier answer's, and the draft stops where the answers end
    assert store.draft([0, 2, 3, 4], 5) == [5, 6]
    assert store.draft([0, 2, 3, 4], 1) == [5]
    assert store.draft([7, 7, 7], 4) == []       # never seen
    assert store.draft([3, 4], 4) == []          # shorter than the indexed 3 tokens


def test_draft_prefers_the_longest_match() -> None:
    """The match runs backwards as far as any answer agrees: "9 2 3 4" selects the one answer
    that had it, though two others continue "2 3 4" otherwise."""
    store = TokenDatastore([[1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6], [9, 2, 3, 4, 8, 8]])
    assert store.draft([0, 2, 3, 4], 3) == [5, 6]
    assert store.draft([9, 2, 3, 4], 3) == [8, 8]


def _reference_draft(answers: list[list[int]], tokens: list[int], width: int):
    """The datastore's rule, written plainly: every place the last 3 tokens occur, kept while
    the match extends backwards (up to 12 tokens), then the most common next token (ties: the
    earliest source), step by step."""
    store: list[int] = []
    for a in answers:
        store += [*a, -1]
    ends = [e for e in range(2, len(store)) if store[e - 2:e + 1] == tokens[-3:]]
    if len(tokens) < 3 or not ends:
        return [], 0
    match = 3
    while match < min(12, len(tokens)):
        keep = [e for e in ends if e - match >= 0 and store[e - match] == tokens[-1 - match]]
        if not keep:
            break
        ends, match = keep, match + 1
    out: list[int] = []
    for step in range(1, width + 1):
        votes = [store[e + step] for e in ends if e + step < len(store) and store[e + step] >= 0]
        if not votes:
            break
        token = Counter(votes).most_common(1)[0][0]
        out.append(token)
        ends = [e for e in ends if e + step < len(store) and store[e + step] == token]
    return out, (match if out else 0)


def test_drafts_match_the_rule_written_plainly() -> None:
    """Random small-vocabulary stores and queries (few sources and many, long matches and
    none): the indexed draft, with its one-source shortcut, equals the plain rule."""
    rng = random.Random(0)
    for _ in range(300):
        vocab = rng.choice([3, 5, 9])
        answers = [[rng.randrange(vocab) for _ in range(rng.randrange(1, 30))]
                   for _ in range(rng.randrange(1, 12))]
        store = TokenDatastore(answers)
        for _ in range(10):
            src = rng.choice(answers)
            tokens = src[:rng.randrange(0, len(src) + 1)] if rng.random() < 0.6 else \
                [rng.randrange(vocab) for _ in range(rng.randrange(0, 15))]
            width = rng.randrange(1, 16)
            assert store.draft_match(tokens, width) == _reference_draft(answers, tokens, width), \
                (answers, tokens, width)


def test_answers_never_run_into_each_other() -> None:
    store = TokenDatastore([[1, 2, 3, 4], [5, 6, 7]])
    assert store.draft([1, 2, 3], 4) == [4]      # "4" ends its answer: not "4 5 6"
    assert store.draft([2, 3, 4], 4) == []


def test_reads_samples_completions_and_compressed_files(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(
        json.dumps({"build": {"seed": 1}}) + "\n"                      # a header: skipped
        + json.dumps({"input_ids": [7, 1, 2, 7, 3], "loss_mask": [0, 1, 1, 0, 1]}) + "\n\n")
    with gzip.open(tmp_path / "b.jsonl.gz", "wt") as f:
        f.write(json.dumps({"completion": [4, 5]}) + "\n")
    with lzma.open(tmp_path / "c.jsonl.xz", "wt") as f:
        f.write(json.dumps({"completion": [6]}) + "\n")
    (tmp_path / "notes.txt").write_text("not read")
    assert list(read_answers(tmp_path)) == [[1, 2], [3], [4, 5], [6]]
    assert list(read_answers(tmp_path / "b.jsonl.gz")) == [[4, 5]]
    assert TokenDatastore.from_path(tmp_path).answers == 4


def test_bad_files_say_what_was_wrong(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        TokenDatastore.from_path(tmp_path / "missing")
    (tmp_path / "empty.jsonl").write_text(json.dumps({"build": {}}) + "\n")
    with pytest.raises(ValueError, match="no answers found; expected datagen samples"):
        TokenDatastore.from_path(tmp_path / "empty.jsonl")
    (tmp_path / "bad.jsonl").write_text('{"completion": [1]}\n{oops\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: not JSON"):
        TokenDatastore.from_path(tmp_path / "bad.jsonl")
    with pytest.raises(ValueError, match="expected ids below"):
        TokenDatastore([[1, 2, 1 << 21]])
