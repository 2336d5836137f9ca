"""``chain-studio lint PATH``: every request a provider would reject or mis-pair, with its exact error text."""
from __future__ import annotations

import argparse
import json

from agent_core.core.heap import keep
from agent_core.ingest.detect import load_any
from agent_core.lint.native import trace_profile
from agent_core.lint.profiles import get_profile, profile_names
from agent_core.lint.scan import group_findings, has_errors, lint_trace
from agent_core.lint.verdicts import verdict_line, verdicts


def run(args: argparse.Namespace) -> int:
    """Check every call's payload for what a provider would reject or mis-pair."""
    if args.profile == "all":
        text, code = verdict_file(args.path, fmt=args.format)
    else:
        text, code = lint_file(args.path, profile=args.profile, fmt=args.format)
    print(text)
    return code


def add(sub) -> None:  # noqa: ANN001
    p = sub.add_parser("lint", help=run.__doc__, description=run.__doc__)
    p.add_argument("path", help="a trace, request body, messages array, JSONL log or conversation file")
    p.add_argument("--profile", default=None, choices=profile_names() + ["all"],
                   help="provider profile (default: the trace's own provider, openai for Chat Completions); "
                        "all: one verdict line per provider")
    p.add_argument("--format", default="text", choices=("text", "json"))
    p.add_argument("--progress", action="store_true",
                   help="report reading a big payload log on stderr (bytes and calls) even when it is not a terminal")
    p.set_defaults(func=run)


def _calls_text(calls: list[int]) -> str:
    """``[3, 4, 5, 9]`` -> ``calls 3-5, 9``."""
    spans: list[str] = []
    start = prev = None
    for c in sorted(set(calls)):
        if prev is not None and c == prev + 1:
            prev = c
            continue
        if start is not None:
            spans.append(f"{start}-{prev}" if prev != start else f"{start}")
        start = prev = c
    if start is not None:
        spans.append(f"{start}-{prev}" if prev != start else f"{start}")
    return ("call " if len(calls) == 1 else "calls ") + ", ".join(spans)



def verdict_file(path, *, fmt: str = "text") -> tuple[str, int]:
    """Every profile's verdict on a file: one line each (or ``{"verdicts": [...]}``); exit 1 when any rejects."""
    trace = load_any(path)
    found = verdicts(trace)
    code = 0 if all(v.accepted for v in found) else 1
    if fmt == "json":
        return json.dumps({"verdicts": [v.export() for v in found]}, ensure_ascii=False, indent=1), code
    return "\n".join([f"{path}: {trace.format}, {len(trace.calls)} calls, {len(found)} providers"]
                     + [f"  {verdict_line(v)}" for v in found]), code


def native_profile(trace) -> str:
    """The profile of the provider whose wire API the trace's first call was written for (else openai)."""
    return trace_profile(trace)


def _where(f) -> str:
    """Where a finding is, as the native body names it: ``message N`` for a ``messages`` array, else the element of
    its native path (``input[N]`` of a Responses request, ``contents[N]`` of Gemini); ``request`` for no message."""
    if f.index is None:
        return "request"
    root, bracket, _ = (f.path or "").partition("]")
    return root + bracket if bracket and not root.startswith("messages[") else f"message {f.index}"


def lint_file(path, *, profile: str | None = "openai", fmt: str = "text") -> tuple[str, int]:
    """Load any supported file, lint every call; the report text and the exit code (0 clean, 1 errors).

    Warnings and info notes never change the exit code.

    Unreadable input raises ``MalformedTraceError`` (the CLI exits 2 with one line).
    """

    trace = load_any(path)
    prof = get_profile(profile or native_profile(trace))
    findings = lint_trace(trace, profile=prof.name)
    keep(trace, findings)       # freed by the exit, when the command is the process's last work
    code = 1 if has_errors(findings) else 0
    if fmt == "json":
        return json.dumps({"calls": len(trace.calls), "profile": prof.name, "format": trace.format,
                           "errors": sum(f.severity == "error" for f in findings),
                           "warnings": sum(f.severity == "warning" for f in findings),
                           "notes": sum(f.severity == "info" for f in findings),
                           "loader_warnings": list(trace.warnings),
                           "findings": [f.export() for f in findings]}, ensure_ascii=False, indent=1), code
    counts = {s: sum(f.severity == s for f in findings) for s in ("error", "warning", "info")}
    lines = [f"{path}: {trace.format}, {len(trace.calls)} calls, profile {prof.name}: "
             f"{counts['error']} errors, {counts['warning']} warnings"
             + (f", {counts['info']} notes" if counts["info"] else "")]
    lines += [f"  note: {w}" for w in trace.warnings]
    for f, calls in group_findings(findings):
        lines.append(f"{_calls_text(calls)}, {_where(f)}: {f.severity} {f.rule}: {f.message}")
        if f.api_error:
            lines.append(f"    {prof.name} says: {f.api_error}")
        lines.append(f"    fix: {f.fix}")
    return "\n".join(lines), code
