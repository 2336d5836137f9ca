"""Two traces call by call: where the payloads start to differ, and how.

Calls are paired by position (call k of one with call k of the other), as
two runs of the same script line up. For each pair: the message counts, the
HTTP status, and the first payload message that differs (the point where the
two runs took different paths), compared by exact body.
"""
from __future__ import annotations

from dataclasses import dataclass

from agent_core.core.msg import message_key
from agent_core.trace.model import Call, Trace


@dataclass(frozen=True)
class CallPair:
    """Call ``call`` of the left and the right trace (either may be missing)."""

    call: int
    """The call index."""
    left_messages: int | None
    """Messages in the left payload (None: the left trace has no such call)."""
    right_messages: int | None
    """Messages in the right payload."""
    left_status: int | None
    """The left call's HTTP status."""
    right_status: int | None
    """The right call's HTTP status."""
    first_difference: int | None
    """Index of the first message that differs (None: identical payloads or a call missing)."""
    same: bool
    """The two request bodies' messages and tools are identical."""

    @property
    def verdict(self) -> str:
        if self.left_messages is None:
            return "only right"
        if self.right_messages is None:
            return "only left"
        return "same" if self.same else f"differs from #{self.first_difference}"


def _keys(call: Call) -> list[str]:
    return [message_key(m) if isinstance(m, dict) else repr(m) for m in call.messages]


def _status(call: Call) -> int | None:
    return call.status if isinstance(call.status, int) else None


def compare_traces(left: Trace, right: Trace, start: int = 0, stop: int | None = None) -> list[CallPair]:
    """One ``CallPair`` per call index of the longer trace, from ``start`` to ``stop`` (a page: two
    5,000-call full-history traces hold millions of messages, so only the rows shown are compared)."""
    out = []
    n = max(len(left.calls), len(right.calls))
    for i in range(max(0, start), min(n, n if stop is None else stop)):
        a = left.calls[i] if i < len(left.calls) else None
        b = right.calls[i] if i < len(right.calls) else None
        if a is None or b is None:
            out.append(CallPair(i, len(a.messages) if a else None, len(b.messages) if b else None,
                                _status(a) if a else None, _status(b) if b else None, None, False))
            continue
        ka, kb = _keys(a), _keys(b)
        first = next((j for j, (x, y) in enumerate(zip(ka, kb)) if x != y), None)
        if first is None and len(ka) != len(kb):
            first = min(len(ka), len(kb))
        same = first is None and (a.tools or None) == (b.tools or None)
        out.append(CallPair(i, len(ka), len(kb), _status(a), _status(b), first, same))
    return out
