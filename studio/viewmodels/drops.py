"""Which messages each call no longer sent, read from the trace's memory events (recorded or inferred).

A trim event removes messages from the memory between two calls; the first
call made after it is the one where the messages are "dropped". Reading the
events (not diffing every pair of payloads) keeps this linear in the trace:
a 5,000-call full-history trace has millions of payload messages but only a
few events.
"""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

from agent_core.ingest.alignment import DROP_POLICY, EDIT_POLICY
from agent_core.trace.model import StreamEvent, Trace


@dataclass(frozen=True)
class Dropped:
    """One message a memory event removed before call ``call``."""

    call: int
    """The first call made after the event: the first payload without the message."""
    msg_id: str
    """The message's stream id."""
    role: str
    """Its role (``?`` when the stream does not know the id)."""
    text: str
    """Its text, shortened to one line (trace data: render escaped)."""
    policy: str
    """The policy that removed it (``max-messages``, ``clear``, ``inferred`` ...)."""
    reason: str
    """The event's reason, as recorded (English; translated at the view layer)."""
    after_add: int
    """The event happened after this many messages were added."""

    @property
    def inferred(self) -> bool:
        """Read from what the next payload no longer sent (a payload log, the proxy), not recorded."""
        return self.policy in (DROP_POLICY, EDIT_POLICY)


def _first_call_after(event: StreamEvent, positions: list[int]) -> int:
    if event.calls_before is not None:
        return event.calls_before
    # No call count recorded: the first call made at or after the event's place in the stream.
    return bisect_left(positions, event.after_add)


def _one_line(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text[:limit] + ("…" if len(text) > limit else "")


def _describe(m) -> str:
    """The message's text on one line; an assistant turn that only called tools as ``→ name(args)``."""
    text = _one_line(m.text)
    if text:
        return text
    calls = (m.to_openai() or {}).get("tool_calls") or []
    named = [f"→ {(c.get('function') or {}).get('name')}({(c.get('function') or {}).get('arguments', '')})"
             for c in calls if isinstance(c, dict)]
    return _one_line(" ".join(named))


def drops_by_call(trace: Trace) -> dict[int, list[Dropped]]:
    """Call index -> the messages dropped just before it (calls without drops are absent)."""
    if not trace.events:
        return {}
    positions = [c.stream_index if c.stream_index is not None else len(c.messages) for c in trace.calls]
    # stream_index is non-decreasing in a recording; keep bisect valid on odd imports.
    for i in range(1, len(positions)):
        positions[i] = max(positions[i], positions[i - 1])
    by_id = trace.message_by_id()
    out: dict[int, list[Dropped]] = {}
    for e in trace.events:
        if not e.event.removed:
            continue
        call = _first_call_after(e, positions)
        if not 0 <= call < len(trace.calls):
            continue   # dropped after the last call: no payload went without it
        for mid in e.event.removed:
            m = by_id.get(mid)
            out.setdefault(call, []).append(Dropped(
                call, mid, m.role if m is not None else "?", _describe(m) if m is not None else "",
                e.event.policy, e.event.reason, e.after_add))
    return out
