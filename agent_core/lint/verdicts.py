"""The verdict matrix: one chain judged by every provider profile at once.

For each profile the trace is linted as that provider would read it (a body
written for another wire API is converted first, see ``native.py``); the
verdict is *accepted*, or the first rejection: its rule, the provider's exact
text (None where that provider's wording is not documented: never invented),
the call and the native location. ``call_verdicts`` gives the same per call.
"""
from __future__ import annotations

from dataclasses import dataclass

from agent_core.core.msg import message_key
from agent_core.trace.model import Trace

from .deepseek import documented_reason
from .finding import Finding
from .native import CHAT_COMPLETIONS, api_of_call
from .profiles import PROFILES
from .rules import RULES
from .scan import lint_trace


@dataclass(frozen=True)
class Verdict:
    """One provider's verdict on a chain (or on one call)."""

    profile: str
    """The profile id (``openai``, ``anthropic`` ...)."""
    accepted: bool
    """True when no finding is an error for this provider."""
    rule: str | None = None
    """The rule of the first rejection (None when accepted)."""
    text: str | None = None
    """The provider's exact error text for it; None when accepted or when that text is not documented."""
    call: int | None = None
    """The call whose request is rejected first."""
    location: str | None = None
    """Native JSON path of the element at fault (``messages[3].content[0]``)."""
    losses: int = 0
    """How many things the conversion to this provider's shape could not carry (``conversion-loss`` findings)."""
    documentation: str | None = None
    """When the rejection's error body is not documented but the provider documents the rejection: that sentence,
    labelled as documentation (``lint/deepseek.py``); never shown as the provider's error text."""

    def export(self) -> dict:
        """The JSON object ``lint --profile all --format json`` prints."""
        return {"profile": self.profile, "accepted": self.accepted, "rule": self.rule, "text": self.text,
                "call": self.call, "location": self.location, "conversion_losses": self.losses,
                "documentation": self.documentation}


def _first_error(findings: list[Finding]) -> Finding | None:
    errors = [f for f in findings if f.severity == "error"]
    return min(errors, key=lambda f: (f.call, -1 if f.index is None else f.index)) if errors else None


def _verdict(profile: str, findings: list[Finding]) -> Verdict:
    first = _first_error(findings)
    losses = sum(f.rule == "conversion-loss" for f in findings)
    if first is None:
        return Verdict(profile=profile, accepted=True, losses=losses)
    return Verdict(profile=profile, accepted=False, rule=first.rule, text=first.api_error, call=first.call,
                   location=first.path, losses=losses,
                   documentation=None if first.api_error is not None else documented_reason(profile, first.rule))


_SIGNED_REASONING = {"anthropic": "a thinking block needs the signature Anthropic issued",
                     "bedrock": "Converse reasoning content needs its signature",
                     "gemini": "Gemini needs its own thought signatures"}


def cc_losses(trace: Trace, profile: str) -> list[Finding]:
    """What a Chat Completions chain loses on its way to a provider with signed reasoning.

    A ``reasoning_content`` (DeepSeek, Qwen) has no faithful place there: it is a
    ``conversion-loss`` finding per assistant message carrying it (first call that sends it).
    """
    why = _SIGNED_REASONING.get(profile)
    if why is None:
        return []
    out, seen = [], set()
    for c in trace.calls:
        if api_of_call(c, c.request_head()).name != CHAT_COMPLETIONS:
            continue
        for i, m in enumerate(c.messages):
            if isinstance(m, dict) and m.get("role") == "assistant" and m.get("reasoning_content") \
                    and message_key(m) not in seen:
                seen.add(message_key(m))
                out.append(Finding(rule="conversion-loss", severity="warning", call=c.index, index=i,
                                   tool_call_ids=[], message=f"Message {i}'s reasoning_content cannot be carried to "
                                   f"{profile}: {why}.", api_error=None, fix=RULES["conversion-loss"].fix,
                                   profile=profile, path=f"messages[{i}].reasoning_content"))
    return out


def verdicts(trace: Trace, profiles: list[str] | None = None) -> list[Verdict]:
    """One verdict per profile (every profile by default) for the whole trace."""
    return [_verdict(p, lint_trace(trace, profile=p) + cc_losses(trace, p)) for p in profiles or list(PROFILES)]


def call_verdicts(trace: Trace, profiles: list[str] | None = None) -> dict[int, list[Verdict]]:
    """Per call, one verdict per profile (the studio's matrix)."""
    names = profiles or list(PROFILES)
    by_profile = {p: lint_trace(trace, profile=p) + cc_losses(trace, p) for p in names}
    calls = [c.index for c in trace.calls]
    return {n: [_verdict(p, [f for f in by_profile[p] if f.call == n]) for p in names] for n in calls}


_UNDOCUMENTED = "the provider's text for this is not documented"


def verdict_line(v: Verdict) -> str:
    """``mistral: rejected at call 2, messages[1].tool_calls[0].id (invalid-tool-call-id): <text>``."""
    loss = f" ({v.losses} conversion losses)" if v.losses else ""
    if v.accepted:
        return f"{v.profile}: accepted{loss}"
    text = v.text if v.text is not None else f"({v.documentation or _UNDOCUMENTED})"
    return f"{v.profile}: rejected at call {v.call}, {v.location} ({v.rule}): {text}{loss}"
