"""A datastore that learns from the answers this server gives (`--spec-datastore-learn`).

Why: a deployment's answers repeat themselves (its greetings, confirmations, tool calls'
shapes, sign-offs), and the drafter never saw them. A store of the answers already served
drafts them from the first repeat on, with no datagen and no training: on recorded courier
calls, a store of earlier calls' answers raised τ as served by 19% (docs/recording.md).
SuffixDecoding (arXiv:2411.04975) keeps such a store of a server's own outputs.

How: each finished answer is kept (the newest `max_tokens` tokens of them, in memory only;
nothing is written anywhere) and the index over them (datastore.py) is rebuilt on one
background thread, so the engine's step never waits on a sort. A rebuild starts once the
answers not yet indexed reach 1/16 of those indexed (and at least 64 tokens): the total
indexing work stays a small multiple of one index of the whole store, and a new deployment
learns from its first few answers. A row's draft comes from this store or from the `--spec-datastore`
file's, whichever matched more of the row's last tokens (this store on a tie).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from turnspec.engine.spec.proposers import Proposal
from turnspec.engine.spec.proposers.datastore import NGRAM, TokenDatastore

REBUILD_MIN_TOKENS = 64  # a rebuild waits for at least this many new tokens...
REBUILD_GROWTH = 16  # ...and for 1/16 of the tokens already indexed


class LearningDatastore:
    """Drafts from the served answers (and an optional fixed store), `TokenDatastore.draft`'s
    interface; the engine calls `learn` with each finished answer."""

    def __init__(self, base: TokenDatastore | None = None, max_tokens: int = 1_000_000,
                 background: bool = True) -> None:
        if not isinstance(max_tokens, int) or max_tokens < NGRAM:
            raise ValueError(f"LearningDatastore: max_tokens={max_tokens!r}; expected an integer "
                             f">= {NGRAM}")
        self.base = base
        self.max_tokens = max_tokens
        self.learned = TokenDatastore([])  # the index in use
        self._answers: deque[np.ndarray] = deque()
        self._kept = 0  # tokens in _answers
        self._pending = 0  # tokens learned since the index in use (or the one building) began
        self._building: Future[TokenDatastore] | None = None
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="datastore") if background else None

    def learn(self, answer: Sequence[int]) -> None:
        """Keep one finished answer (the newest max_tokens tokens stay); index when due."""
        if len(answer) < NGRAM:
            return
        arr = np.asarray(answer, dtype=np.int64)[-self.max_tokens:]
        self._answers.append(arr)
        self._kept += len(arr)
        self._pending += len(arr)
        while self._kept > self.max_tokens:
            self._kept -= len(self._answers.popleft())
        self._swap()
        if self._building is None and self._pending >= max(
                REBUILD_MIN_TOKENS, len(self.learned) // REBUILD_GROWTH):
            self._pending = 0
            answers = list(self._answers)
            if self._pool is None:
                self.learned = TokenDatastore(answers)
            else:
                self._building = self._pool.submit(TokenDatastore, answers)

    def _swap(self) -> None:
        """Put a finished background index in use (an error in it is raised here)."""
        if self._building is not None and self._building.done():
            self.learned = self._building.result()
            self._building = None

    def wait(self) -> None:
        """Finish the index being built, and index what it left out (tests, shutdown)."""
        if self._building is not None:
            self.learned = self._building.result()
            self._building = None
        if self._pending:
            self._pending = 0
            self.learned = TokenDatastore(list(self._answers))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    @property
    def answers(self) -> int:
        """Answers kept (not all of them indexed yet, while a rebuild is due or running)."""
        return len(self._answers)

    def propose(self, tokens: Sequence[int], width: int) -> Proposal:
        """Up to `width` tokens, from whichever store matched more of `tokens`' end (this one
        on a tie)."""
        self._swap()
        mine = self.learned.propose(tokens, width)
        if self.base is None:
            return mine
        theirs = self.base.propose(tokens, width)
        return mine if mine.tokens and mine.match >= theirs.match else theirs

    def draft(self, tokens: Sequence[int], width: int) -> list[int]:
        """`propose`'s tokens."""
        return self.propose(tokens, width).tokens
