"""langchain-trim-last's rule on replay's memory, one add at a time (``base.IncrementalTrimmer``).

``LangchainTrimLast.apply`` reverses the list and counts it from the newest message back on every add: the
memory's whole window per add. What it keeps is always a suffix of the list (after a leading system message,
with ``include_system``): the longest one whose count fits, cut back to a ``start_on`` type. The memory is
that suffix afterwards, and only grows at the end between adds, so the same suffix is found by keeping the
count of what the memory holds and dropping from its front while it does not fit: O(added + dropped) per add.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_core.core.msg import Msg

from .base import TrimCut, TrimResult


class LangchainTrimmer:
    """The suffix ``apply`` keeps, found from a running count (see module). Where ``apply`` would keep a
    message because another one it drops has the same id (``result_of`` matches by id), the add is given
    to ``apply`` itself."""

    def __init__(self, policy: Any, end_on: set[str] | None) -> None:
        """``policy``: the ``LangchainTrimLast`` (its counter, budget, ``apply`` and reasons); ``end_on``: the roles
        its ``start_on`` names (None for any)."""
        self._policy = policy
        self._size, self._empty = policy._counter()
        self._end_on = end_on
        self._n: int | None = None      # the list's length after the last add (None: count it anew)
        self._start = 0                 # 1 when a leading system message is counted alone
        self._total = 0                 # the count of messages[start:n]
        self._ids: dict[str, int] = {}  # id -> how many messages of the list have it

    def add(self, messages: list[Msg]) -> TrimCut | TrimResult:
        n, size = len(messages), self._size
        start = 1 if self._policy.include_system and n and messages[0].role == "system" else 0
        ids = self._ids
        if self._n is None or start != self._start or n < self._n:
            self._start, self._total, ids = start, 0, {}
            self._ids = ids
            new = messages
            self._total = sum(size(m) for m in messages[start:])
        else:
            new = messages[self._n:]
            self._total += sum(size(m) for m in new)
        for m in new:
            ids[m.id] = ids.get(m.id, 0) + 1
        if not messages:
            self._n = 0
            return TrimCut([])
        remaining = self._policy.max_tokens
        if start:
            remaining = max(0, remaining - (size(messages[0]) + self._empty))
        i, total, end_on = start, self._total, self._end_on
        while i < n and self._empty + total > remaining:
            total -= size(messages[i])
            i += 1
        if end_on:
            while i < n and messages[i].role not in end_on:
                total -= size(messages[i])
                i += 1
        if i == start:
            self._n = n
            return TrimCut([])
        gone = messages[start:i]
        for m in gone:
            ids[m.id] -= 1
        if any(ids[m.id] for m in gone):        # an id shared with a kept message: apply's own result
            self._n = None
            return self._policy.apply(messages)
        for m in gone:
            if not ids[m.id]:
                del ids[m.id]
        self._n, self._total = n - (i - start), total
        kept = n - (i - start)
        return TrimCut([(start, i)], self._policy.reason_for(kept))

    def close(self, messages: Sequence[Msg]) -> None:
        """The owner replaces its list: the next add counts it anew (the policy itself holds no state)."""
        self._n = None
