"""Text search over every call's payload: which calls carried the text, and where it was dropped.

Built on the replay layer's retention scan (``replay/probes.py``), which reads
a payload that extends the previous one by its tail: a full-history trace of
5,000 calls is scanned in linear time, not quadratic.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from agent_core.replay.probes import Probe, recorded_retention
from agent_core.trace.model import Trace

from .drops import Dropped, drops_by_call


@dataclass(frozen=True)
class Loss:
    """A call whose payload no longer carries the text although the call before it did."""

    call: int
    """The first call without it."""
    previous: int
    """The last call with it."""
    drops: tuple[Dropped, ...] = ()
    """The removed messages that held the text (empty: no memory event explains it)."""


@dataclass(frozen=True)
class SearchResult:
    """Where a text appears across the trace's payloads (case-insensitive, literal)."""

    query: str
    """The text searched for."""
    carried: list[int] = field(default_factory=list)
    """Calls whose payload contains it."""
    losses: list[Loss] = field(default_factory=list)
    """Calls where it disappeared, in call order."""

    @property
    def found(self) -> bool:
        return bool(self.carried)


def compact(calls: list[int]) -> str:
    """``0-19, 25`` for a sorted list of call numbers."""
    out, start, prev = [], None, None
    for c in calls:
        if start is None:
            start = prev = c
        elif c == prev + 1:
            prev = c
        else:
            out.append(f"{start}" if start == prev else f"{start}–{prev}")
            start = prev = c
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}–{prev}")
    return ", ".join(out)


def search(trace: Trace, query: str) -> SearchResult:
    """Every call carrying ``query`` and every call where it was dropped, with the drop that did it."""
    query = query.strip()
    if not query:
        return SearchResult(query)
    probe = Probe(label=query, pattern="(?i)" + re.escape(query), regex=True, kind="text")
    matrix = recorded_retention(trace, [probe])
    present = matrix.rows[0].present if matrix.rows else []
    calls = matrix.calls
    carried = [c for c, p in zip(calls, present) if p]
    needle = query.casefold()
    by_call = drops_by_call(trace) if carried else {}
    by_id = trace.message_by_id() if carried else {}
    losses = []
    for i in range(1, len(calls)):
        if present[i - 1] and not present[i]:
            holders = tuple(d for d in by_call.get(calls[i], [])
                            if d.msg_id in by_id and needle in by_id[d.msg_id].text.casefold())
            losses.append(Loss(calls[i], calls[i - 1], holders))
    return SearchResult(query, carried, losses)
