"""A linter finding: one problem in one payload, with where it is in the native body; and how to sum findings up."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """One problem in one payload."""

    rule: str
    """Stable rule id (see ``RULES``)."""
    severity: str
    """``error`` (the provider rejects the request), ``warning`` (accepted, probably wrong) or ``info``
    (accepted and often deliberate; never fails a run)."""
    call: int
    """Index of the call whose payload holds the problem (0 for a lone payload)."""
    index: int | None
    """Message index in the payload; None when the problem is not in one message (tools, empty list)."""
    tool_call_ids: list[str]
    """The tool call ids involved, in payload order."""
    message: str
    """One-line explanation a newcomer understands."""
    api_error: str | None
    """The selected provider's exact error text with the values filled in; None when it does not check or the text is unknown."""
    fix: str
    """Suggested fix, one line."""
    profile: str
    """The provider profile the severity and text come from."""
    param: str | None = None
    """OpenAI's ``param`` for this error (``messages.[3].role``), for the error envelope."""
    code: str | None = None
    """OpenAI's ``code`` for this error (``empty_array`` ...), None for the older protocol errors."""
    path: str | None = None
    """Native JSON path of the element at fault in the request body (``messages[3].tool_calls[1].id``,
    ``tools[0].function.name``); the linter always sets it."""

    def export(self) -> dict:
        """Plain JSON-ready dict (the CLI's ``--format json`` and the studio use it)."""
        return {"rule": self.rule, "severity": self.severity, "call": self.call, "index": self.index,
                "tool_call_ids": list(self.tool_call_ids), "message": self.message, "api_error": self.api_error,
                "fix": self.fix, "profile": self.profile, "param": self.param, "code": self.code,
                "path": self.path}


def has_errors(findings: Iterable[Finding]) -> bool:
    """Whether any finding is an error (the provider would reject the request)."""
    return any(f.severity == "error" for f in findings)


def group_findings(findings: Iterable[Finding]) -> list[tuple[Finding, list[int]]]:
    """Collapse a finding repeated in many calls' payloads (same rule, index, ids, text) into one row.

    In a full-history log a broken message is re-sent in every later call;
    the text report shows it once with the calls it affects.
    """
    groups: dict[tuple, tuple[Finding, list[int]]] = {}
    for f in findings:
        key = (f.rule, f.index, tuple(f.tool_call_ids), f.message, f.severity)
        if key in groups:
            groups[key][1].append(f.call)
        else:
            groups[key] = (f, [f.call])
    return list(groups.values())
