"""Which calls a replay rebuilds, and where in the stream each was made."""
from __future__ import annotations

from agent_core.trace.model import Call, Trace


def chat_calls(trace: Trace) -> list[Call]:
    """The calls a policy shapes (summary or counterfactual calls are not replayed)."""
    return [c for c in trace.calls if c.purpose == "chat"]


def call_position(call: Call, stream_len: int) -> int:
    """Where the call was made: its stream_index, else after as many messages as it sent."""
    if call.stream_index is not None:
        return min(max(call.stream_index, 0), stream_len)
    return min(len(call.messages), stream_len)


def trace_model(trace: Trace) -> str | None:
    calls = chat_calls(trace)
    return next((c.model for c in calls if c.model), None) or trace.meta.get("model")

