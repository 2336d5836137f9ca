"""Linter findings as plain dicts, grouped the way the Timeline and Lint screens show them."""
from __future__ import annotations

from agent_core.lint.scan import lint_trace
from agent_core.trace.model import Trace


def findings_for(trace: Trace, profile: str = "openai") -> list[dict]:
    """Every linter finding of the trace as plain dicts (``Finding.export()``), call order."""
    return [f.export() for f in lint_trace(trace, profile=profile)]


def problems(findings: list[dict]) -> list[dict]:
    """The errors and warnings: ``info`` notes describe accepted, often deliberate payloads and count as none."""
    return [f for f in findings if f.get("severity") != "info"]


def findings_by_call(findings: list[dict]) -> dict[int, list[dict]]:
    """Findings keyed by call index; findings about no particular call are left out."""
    out: dict[int, list[dict]] = {}
    for f in findings:
        if isinstance(f.get("call"), int):
            out.setdefault(f["call"], []).append(f)
    return out


def findings_by_message(findings: list[dict], call: int) -> dict[int | None, list[dict]]:
    """Findings of one call keyed by payload index (None = about the call as a whole)."""
    out: dict[int | None, list[dict]] = {}
    for f in findings:
        if f.get("call") == call:
            out.setdefault(f.get("index"), []).append(f)
    return out
