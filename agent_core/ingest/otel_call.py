"""One model call read out of telemetry, and the trace a list of them makes.

Every telemetry importer (OTLP spans and logs, the OpenAI Agents SDK, Inspect AI) turns what it read into
``TelemetryCall`` records; ``calls_to_trace`` builds the ``Trace``. A call says whether its body is the
exact request that was sent or was rebuilt from recorded messages, and what the instrumentation did not
record at all (``unrecorded``): the trace's ``meta["unrecorded"]`` lists it, and when tools are among it
``meta["tools_recorded"]`` is False, so the linter does not blame the app for tools it cannot see.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent_core.trace.model import Trace

from .payload_log import trace_from_requests

FINISH_REASONS = {"tool_call": "tool_calls", "tool-calls": "tool_calls", "function_call": "function_call",
                  "end_turn": "stop", "max_tokens": "length"}
"""Finish reasons as conventions spell them -> Chat Completions' spelling."""


@dataclass
class TelemetryCall:
    """A model call as an instrumentation recorded it."""

    body: dict
    """The request body: exact when ``exact``, else rebuilt from the recorded messages and parameters."""
    response: dict | None = None
    """The response as a Chat Completions body (exact or rebuilt), None when nothing of it was recorded."""
    status: int = 200
    """200, or 400 for a call the span marks as failed (the real status is not in the span)."""
    exact: bool = False
    """True when ``body`` is the exact request body the instrumentation recorded."""
    exact_messages: bool = False
    """True when the messages are the exact list sent, though the body around them is rebuilt."""
    unrecorded: list[str] = field(default_factory=list)
    """What the instrumentation did not record for this call ("tools", "parameters", "system prompt" ...)."""
    convention: str = ""
    """Where it came from: "openinference", "gen_ai", "gen_ai events", "gen_ai flat", "agents-sdk", "inspect"."""
    start_ns: int = 0
    """Start time in ns since the epoch (0 when unknown): the order of the calls."""
    trace_id: str | None = None
    """The OTel trace id (hex) or the SDK's trace id."""
    span_id: str | None = None
    """The span id (hex) of the call."""
    root: bool = True
    """True when the call's span has no parent (each call then is a trace of its own)."""
    session: str | None = None
    """A session / conversation id the instrumentation recorded (``session.id``, ``gen_ai.conversation.id``)."""


def conversation_key(call: TelemetryCall) -> str | None:
    """The label that groups a call with its conversation: a recorded session id, else the trace id when the call
    is one span of a larger trace (an agent run); None (continuity decides) when every call is a trace of its own."""
    if call.session:
        return call.session
    if call.trace_id and not call.root:
        # 16 of the 32 hex digits: a whole trace id looks like a 32-character key (an Azure OpenAI key is
        # 32 hex digits), and the proxy's recorder never lets a key-looking label into a file name
        return f"trace-{call.trace_id[:16]}"
    return None


def normalise_finish(reason: Any) -> Any:
    return FINISH_REASONS.get(reason, reason) if isinstance(reason, str) else reason


def started_at(ns: int) -> str | None:
    """An ISO timestamp for a ns epoch time (None for 0)."""
    if not ns:
        return None
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def unrecorded_note(calls: list[TelemetryCall], counted: bool = True) -> list[str]:
    """The warnings that say what was rebuilt and what was not recorded (never silent); ``counted=False`` for a
    file still being written (the receiver's header), whose number of calls is not known yet."""
    notes = []
    if not counted:
        notes = [n.replace("1 of 1 calls: ", "").replace("1 of 1 calls ", "Calls ") for n in unrecorded_note(calls[:1])]
        return [n[:1].upper() + n[1:] for n in notes]
    rebuilt = [c for c in calls if not c.exact and not c.exact_messages]
    around = [c for c in calls if not c.exact and c.exact_messages]
    if around:
        kinds = ", ".join(sorted({c.convention for c in around}))
        notes.append(f"{len(around)} of {len(calls)} calls ({kinds}): the messages are the exact list sent; the "
                     "request body around them is rebuilt from what was recorded")
    if rebuilt:
        kinds = ", ".join(sorted({c.convention for c in rebuilt}))
        notes.append(f"{len(rebuilt)} of {len(calls)} calls were rebuilt from recorded messages ({kinds}), not read "
                     "from an exact request body: key order, null vs absent content and the exact text of tool "
                     "arguments recorded as objects are not known")
    missing: dict[str, int] = {}
    for c in calls:
        for what in c.unrecorded:
            missing[what] = missing.get(what, 0) + 1
    for what, n in missing.items():
        notes.append(f"{n} of {len(calls)} calls: the instrumentation did not record {what}, so it is absent here; "
                     "the linter does not report that absence")
    return notes


def calls_to_trace(calls: list[TelemetryCall], warnings: list[str], source: str, fmt: str) -> Trace:
    """The trace of ``calls`` (ordered by start time), with ``warnings`` and the notes on what was not recorded."""
    calls = sorted(calls, key=lambda c: c.start_ns)
    trace = trace_from_requests([c.body for c in calls], [c.response for c in calls],
                                statuses=[c.status for c in calls], sessions=[conversation_key(c) for c in calls],
                                started_at=[started_at(c.start_ns) for c in calls], source=source, format=fmt)
    unrecorded = sorted({what for c in calls for what in c.unrecorded})
    if unrecorded:
        trace.meta["unrecorded"] = unrecorded
    if "tools" in unrecorded:
        trace.meta["tools_recorded"] = False
    trace.meta["exact_bodies"] = sum(c.exact for c in calls)
    trace.warnings[:0] = warnings + unrecorded_note(calls)
    return trace
