"""tools_grammar/lru.py: the least recently used entry goes first, a `get` makes an entry
recent and counts a hit, and threads putting and getting at once keep the bound."""

from __future__ import annotations

import threading

import pytest

from turnspec.tools_grammar.lru import LRU


def test_the_least_recently_used_goes_first() -> None:
    lru: LRU[str, int] = LRU(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1 and lru.hits == 1  # "a" is now the most recent
    lru.put("c", 3)
    assert "b" not in lru and "a" in lru and "c" in lru and len(lru) == 2
    assert lru.get("b") is None and lru.hits == 1  # a miss counts nothing
    lru.put("a", 10)  # a new value for a kept key: recent again, still two entries
    lru.put("d", 4)
    assert lru.get("a") == 10 and "c" not in lru and len(lru) == 2
    lru.clear()
    assert len(lru) == 0 and lru.get("a") is None
    with pytest.raises(ValueError, match="expected >= 1"):
        LRU(0)


def test_threads_keep_the_bound() -> None:
    lru: LRU[int, int] = LRU(64)

    def work(base: int) -> None:
        for i in range(2000):
            lru.put(base + i % 100, i)
            lru.get(base + (i * 7) % 100)

    threads = [threading.Thread(target=work, args=(k * 1000,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(lru) == 64
