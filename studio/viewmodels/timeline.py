"""The Timeline screen's rows (one per API call) and the links between a payload's tool calls and results."""
from __future__ import annotations

from agent_core.trace.model import Trace

from .findings import findings_by_call, problems
from .tokens import CallTokens


def timeline_rows(trace: Trace, series: list[CallTokens], findings: list[dict]) -> list[dict]:
    """One row per API call, for the timeline table."""
    # Info notes stay in the call's detail, out of the problems column.
    by_call = findings_by_call(problems(findings))
    rows = []
    for call, t in zip(trace.calls, series):
        rules = sorted({f.get("rule", "?") for f in by_call.get(call.index, [])})
        rows.append({
            "call": call.index,
            "time": (call.started_at or "")[11:23] or "",
            "latency_ms": call.latency_ms,
            "model": call.model or "",
            "messages": len(call.messages),
            "tools": len(call.tools or []),
            "estimated": t.estimated,
            "reported": t.reported,
            "finish": call.finish_reason or ("error" if call.failed else ""),
            "status": call.status,
            "findings": ", ".join(rules),
            "purpose": call.purpose,
        })
    return rows


def tool_links(messages: list[dict]) -> tuple[dict[str, int], dict[str, int]]:
    """(call id -> index of the assistant message that made it, call id -> index of its tool result)."""
    made, answered = {}, {}
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            continue
        for c in m.get("tool_calls") if isinstance(m.get("tool_calls"), list) else []:
            if isinstance(c, dict) and c.get("id"):
                made.setdefault(str(c["id"]), i)
        if m.get("role") == "tool" and m.get("tool_call_id"):
            answered.setdefault(str(m["tool_call_id"]), i)
    return made, answered
