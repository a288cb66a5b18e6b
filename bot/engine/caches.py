"""Caches keyed by what members ask, each within a byte budget: least recently used out first.

The engine remembers, per repository snapshot, which commits a `range:` or `branch:` reaches and
which a `path:` touched, and people's e-mails; the keys are what a member typed. Unbounded, one
person's 1,600 distinct `range:..SHA` took a report worker from 94 to about 400 MiB (issue 22).
Each such cache is a `BoundedCache`: entries are weighed in bytes (numpy buffers, strings, plus
a fixed overhead per entry for the key and bookkeeping), and the least recently used go first
once the budget (GAD_QUERY_CACHE_MB, shared out in Engine) is full.

Nothing is kept for a question that is refused: inside `with cache.staged():` new entries wait
on the side (thread by thread) and reach the cache only when the block ends without an error, so
`path:nosuch1`, `path:nosuch2`, ... leave nothing behind. cachetools does the LRU bookkeeping;
this module owns that library.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import cachetools
import numpy as np

ENTRY_OVERHEAD = 256  # bytes per entry besides its value: the key's tuple, the LRU's links, the dict slot


def size_of(thing: Any) -> int:
    """Roughly how many bytes `thing` holds (numpy buffers exactly; containers and dataclasses by their items)."""
    if isinstance(thing, np.ndarray):
        return int(thing.nbytes)
    if isinstance(thing, (str, bytes)):
        return len(thing)
    if isinstance(thing, (tuple, list, frozenset, set)):
        return 8 * len(thing) + sum(size_of(item) for item in thing)
    if dataclasses.is_dataclass(thing) and not isinstance(thing, type):  # e.g. a project's merged rows
        return 32 + sum(size_of(getattr(thing, f.name)) for f in dataclasses.fields(thing))
    return 32  # an int, None, a small object


@dataclass(frozen=True)
class _Entry:
    value: Any
    size: int


class BoundedCache:
    """A thread-safe LRU map within `budget` bytes (see the module docstring)."""

    def __init__(self, name: str, budget: int):
        self.name = name
        self.budget = max(0, int(budget))
        self._lru: cachetools.LRUCache = cachetools.LRUCache(maxsize=max(1, self.budget),
                                                             getsizeof=lambda entry: entry.size)
        self._lock = threading.Lock()
        self._local = threading.local()  # .pending (dict) and .depth while a question is being answered

    def __len__(self) -> int:
        with self._lock:
            return len(self._lru)

    @property
    def bytes(self) -> int:
        """Bytes the kept entries weigh (never more than the budget)."""
        with self._lock:
            return int(self._lru.currsize)

    def get(self, key: Any, default: Any = None) -> Any:
        pending = getattr(self._local, "pending", None)
        if pending is not None and key in pending:
            return pending[key].value
        with self._lock:
            entry = self._lru.get(key)  # a hit makes it the most recently used
        return default if entry is None else entry.value

    def put(self, key: Any, value: Any) -> None:
        entry = _Entry(value, ENTRY_OVERHEAD + size_of(key) + size_of(value))
        pending = getattr(self._local, "pending", None)
        if pending is not None:
            pending[key] = entry
        else:
            self._keep(key, entry)

    def get_or_compute(self, key: Any, compute: Callable[[], Any]) -> Any:
        """The cached value of `key`, or `compute()` (then cached); never cache None."""
        found = self.get(key)
        if found is None:
            found = compute()
            self.put(key, found)
        return found

    def _keep(self, key: Any, entry: _Entry) -> None:
        if entry.size > self.budget:
            return  # larger than the whole budget: computed again when asked again
        with self._lock:
            self._lru[key] = entry  # evicts the least recently used until it fits

    @contextmanager
    def staged(self) -> Iterator[None]:
        """Keep the entries put inside only if the block ends without an error (nesting is fine)."""
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            self._local.pending = {}
        self._local.depth = depth + 1
        answered = False
        try:
            yield
            answered = True
        finally:
            self._local.depth = depth
            if depth == 0:
                pending, self._local.pending = self._local.pending, None
                if answered:
                    for key, entry in pending.items():
                        self._keep(key, entry)
