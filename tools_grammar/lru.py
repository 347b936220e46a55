"""A small thread-safe LRU map: the grammar compiler's compiled grammars and structural tags
(compiler.py) and the chat template's tokenized stretches (engine/chat.py). Each is read from
the server's event loop and from worker threads at once."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """At most `size` entries, the least recently used dropped first; `hits` counts the `get`s
    that found their key."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"size: expected >= 1 entries, got {size}")
        self.size = size
        self.hits = 0
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, key: K) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
                self.hits += 1
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
