"""The datastore, a proposer (`--spec-datastore PATH`): the continuation that the
target's own earlier answers most often took after a row's last tokens.

Why: a DFlash drafter proposes what its training taught it; a deployment's answers repeat
phrasings of their own (a greeting, a confirmation, a tool call's shape, a sign-off) that a
store of those answers holds verbatim. Retrieval drafts (REST, arXiv:2311.08252) and suffix
trees over earlier outputs (SuffixDecoding, arXiv:2411.04975) draft from such a store. Here the
store's block is one more candidate of a greedy row's verify branches (planner.py), so a
wrong one costs a verify row and nothing else: output stays the target's.

How: the answers are concatenated (a separator between them) and every 3-gram's end position
is indexed in one sorted array. A row's last 3 tokens select the positions that follow the
same 3 tokens; the match is extended backwards (up to MAX_MATCH tokens) while any position
still agrees, so the most specific sources win; then the draft walks forward taking, at each
step, the token most of the surviving positions continue with, and keeps only those. Numpy
throughout; a few tens of µs a row.

Files: datagen samples (`samples.jsonl` lines with `input_ids` and `loss_mask`: the masked
spans are the answers), packed completions (`pack-responses` lines with `completion`), plain,
.gz or .xz, one file or a folder of them. `turnspec speculator datagen --from-conversations DIR`
turns recorded traffic (`serve --record-conversations DIR`) into such samples.
"""

from __future__ import annotations

import gzip
import json
import lzma
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO

import numpy as np

from turnspec.engine.spec.proposers import Proposal

NGRAM = 3  # the indexed key: a row's last 3 tokens
MAX_MATCH = 12  # the match is extended backwards up to this many tokens
MAX_SOURCES = 512  # positions a draft is voted from (the latest in the store)
TOKEN_BITS = 21  # a 3-gram key packs three token ids of up to 2**21 (a 2M vocabulary)


def _key(a: np.ndarray | int, b: np.ndarray | int, c: np.ndarray | int):
    return (a << (2 * TOKEN_BITS)) | (b << TOKEN_BITS) | c


class TokenDatastore:
    """The target's earlier answers, indexed for `draft`."""

    def __init__(self, answers: Iterable[Sequence[int]]) -> None:
        parts = []
        for ans in answers:
            if len(ans):
                parts += [np.asarray(ans, dtype=np.int64), np.array([-1])]
        tokens = np.concatenate(parts) if parts else np.array([-1], dtype=np.int64)
        if tokens.max() >= 1 << TOKEN_BITS:
            raise ValueError(f"TokenDatastore: token id {int(tokens.max())}, expected ids below "
                             f"{1 << TOKEN_BITS}")
        if (tokens < -1).any():
            raise ValueError("TokenDatastore: a negative token id; expected ids >= 0")
        self.answers = int((tokens == -1).sum()) if parts else 0
        a, b, c = tokens[:-2], tokens[1:-1], tokens[2:]
        ends = np.nonzero((a >= 0) & (b >= 0) & (c >= 0))[0]
        keys = _key(a[ends], b[ends], c[ends])
        order = np.argsort(keys, kind="stable")  # stable: a key's positions stay in store order
        self.keys = keys[order]
        self.ends = (ends[order] + NGRAM - 1).astype(np.int32)  # the 3-gram's last position
        self.tokens = tokens.astype(np.int32)

    def __len__(self) -> int:
        """Tokens of answers in the store."""
        return int((self.tokens >= 0).sum())

    @classmethod
    def from_path(cls, path: str | Path) -> TokenDatastore:
        """The answers in a file or a folder of files (module docstring); a path that holds none
        is an error."""
        return cls.from_answers(read_answers(path), path)

    @classmethod
    def from_answers(cls, answers: Iterable[Sequence[int]], path: str | Path) -> TokenDatastore:
        """`from_path` for answers already read from `path` (`read_answers`)."""
        store = cls(answers)
        if store.answers == 0:
            raise ValueError(f"spec datastore {path}: no answers found; expected datagen samples "
                             "(input_ids + loss_mask) or packed completions (completion)")
        return store

    def propose(self, tokens: Sequence[int], width: int) -> Proposal:
        """The proposer: `draft_match` as a Proposal."""
        draft, match = self.draft_match(tokens, width)
        return Proposal(draft, match)

    def draft(self, tokens: Sequence[int], width: int) -> list[int]:
        """Up to `width` tokens that the store's answers most often continue `tokens` with;
        [] when its last 3 tokens never occur there."""
        return self.draft_match(tokens, width)[0]

    def draft_match(self, tokens: Sequence[int], width: int) -> tuple[list[int], int]:
        """`draft`, and how many of `tokens`' last tokens its sources matched (0: no draft);
        of two stores, the longer match is the more specific (learning.py)."""
        if len(tokens) < NGRAM or width < 1:
            return [], 0
        key = _key(int(tokens[-3]), int(tokens[-2]), int(tokens[-1]))
        lo, hi = np.searchsorted(self.keys, key), np.searchsorted(self.keys, key, side="right")
        if lo == hi:
            return [], 0
        ends, store, match = self.ends[lo:hi][-4 * MAX_SOURCES:], self.tokens, NGRAM
        while match < min(MAX_MATCH, len(tokens)):  # the most specific sources
            if len(ends) == 1:  # one source: extend its match token by token
                end, limit = int(ends[0]), min(MAX_MATCH, len(tokens), int(ends[0]) + 1)
                while match < limit and store[end - match] == tokens[-1 - match]:
                    match += 1
                break
            before = ends - match
            keep = ends[(before >= 0) & (store[np.maximum(before, 0)] == tokens[-1 - match])]
            if not len(keep):
                break
            ends, match = keep, match + 1
        ends = ends[-MAX_SOURCES:]
        out: list[int] = []
        for step in range(1, width + 1):
            if len(ends) == 1:  # one source left: the rest of its answer, as far as width goes
                rest = store[int(ends[0]) + step:int(ends[0]) + width + 1]
                cut = np.flatnonzero(rest < 0)
                out += rest[:cut[0] if len(cut) else len(rest)].tolist()
                break
            at = ends + step
            at = at[at < len(store)]
            nxt = store[at]
            votes = nxt[nxt >= 0]
            if not len(votes):
                break
            token = int(votes[0]) if (votes == votes[0]).all() else \
                Counter(votes.tolist()).most_common(1)[0][0]  # ties: the earliest source's
            out.append(token)
            ends = at[nxt == token] - step
        return out, (match if out else 0)


def _open(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    if path.suffix == ".xz":
        return lzma.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


def read_answers(path: str | Path) -> Iterator[list[int]]:
    """Each answer's token ids in a file, or in the .jsonl[.gz|.xz] files of a folder (sorted)."""
    p = Path(path)
    if p.is_dir():
        files = sorted(f for f in p.iterdir() if f.name.endswith((".jsonl", ".jsonl.gz", ".jsonl.xz")))
    elif p.exists():
        files = [p]
    else:
        raise FileNotFoundError(f"spec datastore {path}: no such file or folder")
    for f in files:
        with _open(f) as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ValueError(f"{f}:{n}: not JSON ({e.msg}); expected one record a line") from None
                if "completion" in rec:
                    yield list(rec["completion"])
                elif "input_ids" in rec and "loss_mask" in rec:
                    yield from answer_spans(rec["input_ids"], rec["loss_mask"])


def answer_spans(ids: Sequence[int], mask: Sequence[int]) -> Iterator[list[int]]:
    """The runs of `ids` where `mask` is 1 (a sample's answers)."""
    span: list[int] = []
    for t, m in zip(ids, mask, strict=True):
        if m:
            span.append(t)
        elif span:
            yield span
            span = []
    if span:
        yield span
