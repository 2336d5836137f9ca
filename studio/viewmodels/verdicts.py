"""The verdict matrix for the Lint page: every provider's verdict on the whole trace and on each call."""
from __future__ import annotations

from agent_core.lint.profiles import PROFILES
from agent_core.lint.verdicts import Verdict, call_verdicts, verdicts
from agent_core.trace.model import Trace


def _row(v: Verdict) -> dict:
    return {"provider": v.profile, "verdict": "accepted" if v.accepted else "rejected", "call": v.call,
            "rule": v.rule or "", "location": v.location or "",
            "text": v.text if v.text is not None else ("" if v.accepted else f"({v.documentation or 'text not documented'})"),
            "conversion losses": v.losses}


def trace_matrix(trace: Trace) -> list[dict]:
    """One row per provider profile: accepted, or the first rejection with its exact text and location."""
    return [_row(v) for v in verdicts(trace)]


def call_matrix(trace: Trace) -> list[dict]:
    """One row per call, one column per provider: ``ok`` or the rule of the first rejection."""
    return [{"call": call, **{v.profile: "ok" if v.accepted else v.rule for v in row}}
            for call, row in call_verdicts(trace).items()]


def provider_names() -> list[str]:
    """The profile ids, in the matrix's column order."""
    return list(PROFILES)
