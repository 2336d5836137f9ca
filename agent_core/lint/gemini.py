"""Gemini rules, checked on the native ``contents[]`` with Gemini's own texts.

Judged when the profile is ``gemini`` and the body is a Gemini request: a
function call turn must come right after a user turn or a function response
turn; a function response turn right after a function call turn, with as many
response parts as the call turn has call parts; on Gemini 3 (a body whose parts
carry ``thoughtSignature``, or whose ``model`` names gemini-3) the first
``functionCall`` part of each model step of the current turn must carry its
signature (only the first of a parallel batch does; sequential calls each need
one). Texts and sources: ``TEXTS`` / ``SOURCES``.
"""
from __future__ import annotations

from typing import Any

from agent_core.apis.chain import Chain, Entry

from .finding import Finding
from .native_texts import GEMINI_TEXTS as TEXTS
from .profiles import Profile
from .rules import RULES


def _is_call_turn(e: Entry) -> bool:
    return e.role == "model" and bool(e.calls)


def _is_response_turn(e: Entry) -> bool:
    return bool(e.results)


def _has_text(e: Entry) -> bool:
    parts = e.content if isinstance(e.content, list) else []
    return any(isinstance(p, dict) and "text" in p for p in parts)


def lint_gemini(chain: Chain, prof: Profile, call: int = 0, check_tools: bool = True,
                model: Any = None) -> list[Finding]:
    """Every finding for one Gemini request, by content index."""
    out: list[Finding] = []

    def emit(rule: str, e: Entry, path: str, message: str, ids: list | None = None, **fill: Any) -> None:
        severity = prof.severity(rule, None, RULES[rule].severity)
        if severity != "off":
            out.append(Finding(rule=rule, severity=severity, call=call, index=e.index,
                               tool_call_ids=[str(i) for i in ids or []], message=message,
                               api_error=TEXTS[rule].format(**fill) if rule in TEXTS else None,
                               fix=RULES[rule].fix, profile=prof.name, path=path))

    entries = chain.entries or ()
    gemini3 = (isinstance(model, str) and "gemini-3" in model) or any(
        isinstance(p, dict) and "thoughtSignature" in p for e in entries for p in (
            e.content if isinstance(e.content, list) else []))
    for e in entries:
        prev = entries[e.index - 1] if e.index > 0 else None
        if _is_call_turn(e):
            ok = prev is not None and (_is_response_turn(prev) or (prev.role == "user" and _has_text(prev)))
            if not ok:
                emit("function-call-placement", e, e.path, f"Content {e.index} is a function call turn but "
                     + ("the history starts with it." if prev is None else f"content {prev.index} before it is "
                                                                           "neither a user turn nor a function "
                                                                           "response turn."))
            nxt = entries[e.index + 1] if e.index + 1 < len(entries) else None
            if nxt is not None and len(nxt.results) != len(e.calls):
                emit("missing-tool-result", e, e.calls[0].path, f"Content {e.index} makes {len(e.calls)} function "
                     f"call(s); content {nxt.index} answers {len(nxt.results)}.", ids=[c.name for c in e.calls])
        if _is_response_turn(e) and (prev is None or not _is_call_turn(prev)):
            emit("function-response-placement", e, e.results[0].path, f"Content {e.index} carries function "
                 "responses but does not follow a function call turn.")
    if gemini3:
        _signatures(entries, emit)
    return sorted(out, key=lambda f: -1 if f.index is None else f.index)


def _signatures(entries: tuple[Entry, ...], emit) -> None:
    """The current turn (after the last user text turn): each model step's first functionCall needs a signature."""
    start = max((e.index for e in entries if e.role == "user" and _has_text(e) and not e.results), default=-1)
    for e in entries[start + 1:]:
        if not _is_call_turn(e):
            continue
        first = e.calls[0]
        if not isinstance(first.native, dict) or "thoughtSignature" not in first.native:
            emit("missing-thought-signature", e, first.path, f"The first functionCall of content {e.index} "
                 f"({first.name!r}) has no thoughtSignature; Gemini 3 requires one on the first call of each step "
                 "of the current turn.", ids=[first.name], name=first.name, pos=e.index)
