"""Linting a request written for a wire API other than Chat Completions.

The native body is the truth. When the profile *is* that API's provider
(``anthropic`` for an Anthropic Messages body, ``gemini`` for a Gemini body),
the provider's own rules run on the native body (``lint/anthropic.py``,
``lint/gemini.py``). For any other profile the body is converted to the Chat
Completions shape (``apis/convert.py``) and the usual scan judges it; every
finding is pointed back at the native path it came from, and what the
conversion could not carry is a ``conversion-loss`` finding of its own.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from agent_core.apis.anthropic_messages import NAME as ANTHROPIC
from agent_core.apis.base import WireApi, api_for_body, get_api, split_endpoint
from agent_core.apis.chat_completions import NAME as CHAT_COMPLETIONS
from agent_core.apis.convert import to_chat_completions

from .anthropic import ThinkingLedger, lint_anthropic
from .finding import Finding
from .gemini import lint_gemini
from .profiles import Profile
from .rules import RULES

NATIVE_PROFILES = {ANTHROPIC: "anthropic", "gemini": "gemini"}
"""Wire API name -> the profile whose provider speaks it natively; the scan sends only these APIs here (any other
adapter's chain, e.g. the Responses API's, goes through the generic scan)."""

_INDEX = re.compile(r"^(?:messages|contents)\[(\d+)\]")      # the native turn: Anthropic's messages, Gemini's contents


def api_of_call(call: Any, head: Any, declared: str | None = None) -> WireApi:
    """The wire API a recorded call was written for: ``declared`` (a replay's payloads are Chat Completions by
    construction), else its URL when recorded, else what its body claims.

    A call read from a trace file keeps its messages as payload runs; only its
    head (every key but ``messages``) and its URL are looked at, so this stays O(1).
    """
    if declared:
        return get_api(declared)
    url = call.attempts[-1].url if getattr(call, "attempts", None) else ""
    hit = split_endpoint(url) if url else None
    if hit is not None:
        return hit[0]
    api = api_for_body(head)
    if api.name == CHAT_COMPLETIONS and getattr(call, "payload", None) is None:
        api = api_for_body(call.request)
    return api


def trace_profile(trace: Any) -> str:
    """The profile that judges a trace when none is chosen: the provider whose wire API its first call was written
    for (``anthropic``, ``gemini``), else ``openai`` (Chat Completions, Responses, an empty trace). O(1)."""
    for c in trace.calls:
        return NATIVE_PROFILES.get(api_of_call(c, c.request_head()).name, "openai")
    return "openai"


def lint_native(api: WireApi, body: Any, prof: Profile, call: int, lint_cc: Callable[..., list[Finding]],
                check_tools: bool = True, ledger: ThinkingLedger | None = None, response: Any = None,
                url: str = "") -> list[Finding]:
    """Every finding for one non-Chat-Completions request under ``prof`` (see the module docstring).

    ``lint_cc(body, profile=, call=, check_tools=)`` lints a Chat Completions body (``scan.lint_request``);
    ``url`` tells Gemini's model, which is not in the body.
    """
    if NATIVE_PROFILES.get(api.name) == prof.name:
        if api.name == ANTHROPIC:
            out = lint_anthropic(api.chain(body), prof, call, check_tools, ledger)
            if ledger is not None and isinstance(response, dict):
                ledger.learn(response.get("content"))
            return out
        model = body.get("model") if isinstance(body, dict) and body.get("model") else url.rsplit("/", 1)[-1]
        return lint_gemini(api.chain(body), prof, call, check_tools, model=model)
    converted = to_chat_completions(api.name, body)
    if converted is None:
        return []
    out = []
    for f in lint_cc(converted.body, profile=prof.name, call=call, check_tools=check_tools):
        out.append(_renative(f, converted.origin))
    for loss in converted.losses:
        m = re.search(r"\[(\d+)\]", loss.path)
        out.append(Finding(rule="conversion-loss", severity=prof.severity("conversion-loss", None, "warning"),
                           call=call, index=int(m.group(1)) if m else None, tool_call_ids=[], message=loss.what,
                           api_error=None, fix=RULES["conversion-loss"].fix, profile=prof.name, path=loss.path))
    return sorted(out, key=lambda f: -1 if f.index is None else f.index)


def _renative(f: Finding, origin: list[str]) -> Finding:
    """A finding on the converted body, pointed at the native element it came from."""
    from dataclasses import replace

    index, path = f.index, f.path
    if index is not None and 0 <= index < len(origin):
        native = origin[index]
        m = _INDEX.match(native)
        index = int(m.group(1)) if m else None
        path = native
    return replace(f, index=index, path=path,
                   message=f.message + " (judged on the chain converted to Chat Completions; message numbers in "
                   "the provider's text count the converted messages)")
