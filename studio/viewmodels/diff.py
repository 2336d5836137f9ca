"""What changed between two consecutive API calls of a trace.

A chat agent re-sends its whole memory on every call, so the interesting
part of call k is what is new since call k-1 and what silently left (and
which trim event took it). Messages are matched by their stream id when
the trace knows it, otherwise by their exact body.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from agent_core.core.msg import message_key
from agent_core.ingest.alignment import DROP_POLICY, EDIT_POLICY
from agent_core.trace.model import StreamEvent, Trace


@dataclass(frozen=True)
class DiffEntry:
    """One message of either payload and what happened to it."""

    status: str
    """``added`` (new in this call), ``kept`` (in both) or ``dropped`` (only in the previous call)."""
    index: int
    """Position in this call's payload (added/kept) or the previous call's payload (dropped)."""
    message: dict
    """The message dict as sent."""
    msg_id: str | None = None
    """The stream id, when known."""
    event: StreamEvent | None = None
    """For a dropped message: the trim/clear event that removed it, if the trace recorded one."""

    @property
    def inferred(self) -> bool:
        """The event was inferred from payloads (a payload log, the proxy), not recorded by the app's memory."""
        return self.event is not None and self.event.event.policy in (DROP_POLICY, EDIT_POLICY)


@dataclass(frozen=True)
class CallDiff:
    """The diff of call ``call`` against call ``previous`` (None for the first call)."""

    call: int
    """Index of the call shown."""
    previous: int | None
    """Index of the call compared against."""
    entries: list[DiffEntry] = field(default_factory=list)
    """Kept and added messages in payload order, then dropped ones in previous-payload order."""

    def of(self, status: str) -> list[DiffEntry]:
        return [e for e in self.entries if e.status == status]

    @property
    def added(self) -> list[DiffEntry]:
        return self.of("added")

    @property
    def kept(self) -> list[DiffEntry]:
        return self.of("kept")

    @property
    def dropped(self) -> list[DiffEntry]:
        return self.of("dropped")

    def counts(self) -> dict[str, int]:
        return {s: len(self.of(s)) for s in ("added", "kept", "dropped")}


def _identities(messages: list[dict], ids: list[str | None]) -> list[str]:
    out = []
    for i, m in enumerate(messages):
        mid = ids[i] if i < len(ids) else None
        out.append(f"id:{mid}" if mid else "key:" + message_key(m))
    return out


def diff_calls(trace: Trace, call: int, previous: int | None = None) -> CallDiff:
    """Diff call ``call`` against ``previous`` (default: the call just before it).

    Args:
        trace: the trace.
        call: index into ``trace.calls``.
        previous: the call to compare with; None means ``call - 1`` (or nothing for call 0).

    Returns:
        A ``CallDiff``; for the first call every message is ``added``.
    """
    current = trace.calls[call]
    if previous is None:
        previous = call - 1 if call > 0 else None
    cur_msgs = current.messages
    cur_ids = _identities(cur_msgs, current.message_ids)
    if previous is None:
        prev_msgs, prev_ids = [], []
    else:
        prev_call = trace.calls[previous]
        prev_msgs = prev_call.messages
        prev_ids = _identities(prev_msgs, prev_call.message_ids)
    # If one side lacks stream ids, identities of the same message would differ in kind; fall back to bodies.
    if {i[:3] for i in cur_ids} != {i[:3] for i in prev_ids} and prev_ids and cur_ids:
        cur_ids = ["key:" + message_key(m) for m in cur_msgs]
        prev_ids = ["key:" + message_key(m) for m in prev_msgs]

    available = Counter(prev_ids)
    entries: list[DiffEntry] = []
    for i, (ident, m) in enumerate(zip(cur_ids, cur_msgs)):
        status = "kept" if available[ident] > 0 else "added"
        if status == "kept":
            available[ident] -= 1
        entries.append(DiffEntry(status, i, m, _msg_id(ident)))
    still_there = Counter(cur_ids)
    for i, (ident, m) in enumerate(zip(prev_ids, prev_msgs)):
        if still_there[ident] > 0:
            still_there[ident] -= 1
            continue
        mid = _msg_id(ident)
        event = trace.event_that_removed(mid) if mid else None
        entries.append(DiffEntry("dropped", i, m, mid, event))
    return CallDiff(call=call, previous=previous, entries=entries)


def _msg_id(identity: str) -> str | None:
    return identity[3:] if identity.startswith("id:") else None
