"""The replays a studio server keeps, bounded by the calls they replayed.

A replay result is kept whole for the Replay page (its columns, the call a person opens, the stories), and at
25,000 calls one takes 45-220 MB (measured per policy: keep-all least, openai-truncation-auto most). A fixed
number of entries let a person who tried each policy in turn on a 25,000-call trace take the server from
495 MB to 1,303 MB (ten policies, ``benchmarks/browser.py --policies``). So the least recently used replays
go once the kept ones hold more than ``max_calls`` replayed calls in all, never the ``keep_recent`` newest
(the page's columns, at most four, are asked for on every run: they stay the newest).

One computation per key at a time: a second thread asking for a replay under way waits for it.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

R = TypeVar("R")


class ReplayCache(Generic[R]):
    """Values by key, least recently used first out, each weighing what ``weight`` says."""

    def __init__(self, max_calls: int, keep_recent: int, max_entries: int, weight: Callable[[R], int]) -> None:
        self.max_calls = max_calls
        """Replayed calls the kept values may hold in all (the least recently used go past it)."""
        self.keep_recent = keep_recent
        """The newest values kept whatever they weigh."""
        self.max_entries = max_entries
        """Values kept at most, whatever they weigh."""
        self._weight = weight
        self._kept: OrderedDict[Hashable, tuple[R, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._computing: dict[Hashable, threading.Event] = {}

    def get(self, key: Hashable, compute: Callable[[], R]) -> R:
        """The value kept for ``key``, else ``compute()``'s (kept; an exception is raised and nothing kept)."""
        while True:
            with self._lock:
                hit = self._kept.get(key)
                if hit is not None:
                    self._kept.move_to_end(key)
                    return hit[0]
                busy = self._computing.get(key)
                if busy is None:
                    busy = self._computing[key] = threading.Event()
                    break
            busy.wait()
        try:
            value = compute()
            with self._lock:
                self._kept[key] = (value, self._weight(value))
                self._evict()
        finally:
            with self._lock:
                self._computing.pop(key, None)
            busy.set()
        return value

    def _evict(self) -> None:
        kept = self._kept
        total = sum(w for _, w in kept.values())
        while len(kept) > self.keep_recent and (total > self.max_calls or len(kept) > self.max_entries):
            _, (_, w) = kept.popitem(last=False)
            total -= w

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._kept

    def keys(self) -> list[Hashable]:
        """The kept keys, least recently used first."""
        with self._lock:
            return list(self._kept)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
