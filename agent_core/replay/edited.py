"""A replayed payload that is a shared history with some messages replaced in place (context editing).

anthropic-clear-tool-uses keeps the whole history and turns old tool results
into placeholders, one or a few per call. A list per call would cost O(N²)
(5,000 calls: 972 MB of report), and so would runs over one shared array (the
placeholders sit between originals: a run per placeholder per call). An
``EditedPayload`` is instead two numbers over two append-only arrays the
simulated memory shares between calls: the first ``length`` messages of the
history (``base`` bodies and ``base_ids``), with the first ``k`` entries of the
edit log applied in order. A call costs O(1); what two calls differ by
(``delta_from``) costs the edits and messages between them, so the linter,
the retention matrix and the report go through a long chain in time linear
in its messages plus its edits.
"""
from __future__ import annotations

from typing import Any

from agent_core.trace.payload import request_body


class EditedPayload:
    """``base[:length]`` with ``log[:k]`` applied; read like ``trace.payload.Payload`` (read-only)."""

    __slots__ = ("_bodies", "base", "base_ids", "k", "last_edit", "length", "log", "parts", "tools")

    def __init__(self, base: list, base_ids: list, length: int, log: list, k: int, tools: Any = None,
                 last_edit: tuple[int, dict] | None = None) -> None:
        self.base = base
        """The history's message bodies, originals (append-only while the log lives)."""
        self.base_ids = base_ids
        """Their stream ids."""
        self.length = length
        self.log = log
        """Edits ``(position, old body, old id, new body, new id)`` in the order they happened (append-only)."""
        self.k = k
        self.tools = tools
        self.last_edit = last_edit
        """``(position, body)`` of a message that differs from ``base`` (the newest such edit), None when none does."""
        self._bodies = log      # ``Payload.starts_with`` compares this: never the same array as a Payload's
        self.parts = None

    def __len__(self) -> int:
        return self.length

    @property
    def added(self) -> list:
        """The edit log: two payloads of one memory share it (a ``Payload``'s ``added`` never is it)."""
        return self.log

    def _both(self) -> tuple[list, list]:
        bodies, ids = self.base[:self.length], self.base_ids[:self.length]
        n = self.length
        for pos, _, _, body, mid in self.log[:self.k]:
            if pos < n:
                bodies[pos] = body
                ids[pos] = mid
        return bodies, ids

    def messages(self, start: int = 0) -> list:
        """The message dicts from ``start`` on (O(length + edits): built when asked)."""
        return self._both()[0][start:]

    def ids(self, start: int = 0) -> list:
        """The id of each message from ``start`` on (a placeholder's own ``cleared_...`` id)."""
        return self._both()[1][start:]

    def request(self, skeleton: dict) -> dict:
        return request_body(skeleton, self.messages(), self.tools)

    def follows(self, other: Any) -> bool:
        """Whether this payload is ``other`` later in the same memory (same arrays, grown and edited since)."""
        return (type(other) is EditedPayload and other.log is self.log and other.base is self.base
                and other.length <= self.length and other.k <= self.k)

    def delta_from(self, prev: EditedPayload) -> tuple[list[tuple[int, dict, str]], list[tuple[dict, dict, str]],
                                                       list[tuple[dict, str]]]:
        """What this payload changes in ``prev`` (``follows(prev)``): the positions below ``len(prev)`` that
        hold another message now, ascending, as ``(position, body, id)``; the bodies they held in ``prev``
        with the new ones ``(old body, new body, id)`` in the same order; and the messages after ``len(prev)``
        as ``(body, id)``."""
        n0, n = prev.length, self.length
        final: dict[int, tuple[dict, str]] = {}
        first_old: dict[int, dict] = {}
        for pos, old, _, body, mid in self.log[prev.k:self.k]:
            if pos < n0 and pos not in first_old:
                first_old[pos] = old
            final[pos] = (body, mid)
        sets = sorted((pos, body, mid) for pos, (body, mid) in final.items() if pos < n0)
        swaps = [(first_old[pos], body, mid) for pos, body, mid in sets]
        tail = list(zip(self.base[n0:n], self.base_ids[n0:n]))
        for pos, (body, mid) in final.items():
            if n0 <= pos < n:
                tail[pos - n0] = (body, mid)
        return sets, swaps, tail
