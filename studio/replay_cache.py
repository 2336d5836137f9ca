"""The replays a studio server keeps, bounded by the calls they replayed.

A replay result is kept whole for the Replay page (its columns, the call a person opens, the stories), and at
25,000 calls one takes 45-220 MB (measured per policy: keep-all least, openai-truncation-auto most). A fixed
number of entries let a person who tried each policy in turn on a 25,000-call trace take the server from
495 MB to 1,303 MB (ten policies, ``benchmarks/browser.py --policies``). So the least recently used replays
go once those the Replay page does not show hold more than ``max_calls`` replayed calls in all; never the newest,
nor the page's columns (``pin``: whatever they weigh). What they held is given back to the system
(``core/heap.py : give_back``): freed memory otherwise stays in the allocator's arenas, which glibc shares out
among threads, and Streamlit runs pages on threads of its own.

One computation per key at a time: a second thread asking for a replay under way waits for it.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

from agent_core.core.heap import give_back

R = TypeVar("R")


class ReplayCache(Generic[R]):
    """Values by key, least recently used first out, each weighing what ``weight`` says."""

    def __init__(self, max_calls: int, max_entries: int, weight: Callable[[R], int]) -> None:
        self.max_calls = max_calls
        """Replayed calls the values neither pinned nor the newest may hold in all (the least recently used go past
        it)."""
        self.max_entries = max_entries
        """Values kept at most, whatever they weigh."""
        self._weight = weight
        self._kept: OrderedDict[Hashable, tuple[R, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._computing: dict[Hashable, threading.Event] = {}
        self._pinned: frozenset[Hashable] = frozenset()

    def pin(self, keys: Iterable[Hashable]) -> None:
        """Keep the values of ``keys`` whatever they weigh, instead of the keys pinned before (the page's columns).
        One set per server, the last page run's: two tabs showing other policies of a 25,000-call trace replay
        their columns again on their turns."""
        with self._lock:
            self._pinned = frozenset(keys)
            gone = self._evict()
        if gone:
            give_back()

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
                gone = self._evict()
        finally:
            with self._lock:
                self._computing.pop(key, None)
            busy.set()
        if gone:
            give_back()
        return value

    def _evict(self) -> int:
        """Drop the least recently used values, neither pinned nor the newest, while those weigh more than
        ``max_calls`` or there are more than ``max_entries`` values; how many went."""
        kept, pinned = self._kept, self._pinned
        newest = next(reversed(kept), None)
        loose = [k for k in kept if k not in pinned and k != newest]
        total = sum(kept[k][1] for k in loose)
        gone = 0
        for key in loose:
            if total <= self.max_calls and len(kept) <= self.max_entries:
                break
            total -= kept.pop(key)[1]
            gone += 1
        return gone

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
