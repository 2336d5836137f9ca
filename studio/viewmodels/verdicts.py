"""The verdict matrix for the Lint page: every provider's verdict on the whole trace and on each call."""
from __future__ import annotations

from agent_core.lint.native import trace_profile
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


def default_profile(loaded) -> str:     # loaded: services.Loaded (view models do not import services)
    """The profile a trace is judged by until the user picks one: its own provider's (``lint/native.py``)."""
    return trace_profile(loaded.trace)


def profile_note(profile: str, native: str, chosen: bool) -> tuple[str, str]:
    """Which profile judged the trace and why, in English and Chinese: the trace's own provider's by default,
    or the one the user picked (named beside the trace's own when they differ)."""
    if not chosen and profile == native:
        return ((f"Judged by the {profile} profile: the trace's own provider (its calls are written for that wire "
                 "API; openai for Chat Completions). Pick another profile to judge it as that provider would."),
                (f"按 {profile} 配置检查：这是 trace 自己的服务商（调用按其 wire API 编写；Chat Completions 用 openai）。"
                 "可选择其他配置，按该服务商的规则检查。"))
    if profile == native:
        return (f"Judged by the {profile} profile, which you picked; it is also the trace's own provider.",
                f"按你选择的 {profile} 配置检查；它也是 trace 自己的服务商。")
    return (f"Judged by the {profile} profile, which you picked; the trace's own provider is {native}.",
            f"按你选择的 {profile} 配置检查；trace 自己的服务商是 {native}。")
