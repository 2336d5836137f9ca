"""Linter findings of replayed and recorded payloads (replay asks the linter, once per payload run)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from agent_core.core.msg import message_key
from agent_core.trace.model import Call, Trace
from agent_core.trace.payload import Payload

from .calls import chat_calls
from .edited import EditedPayload
from .result import ReplayResult

if TYPE_CHECKING:
    from agent_core.lint.finding import Finding


def lint_many(payloads: Sequence[tuple[int, list[dict], list[dict] | None]], profile: str = "openai",
              check_tools: bool = True, of: Trace | None = None) -> dict[int, list[Finding]]:
    """Findings per call for many payloads (see ``lint_calls``), each written in the trace's wire API when its
    provider has rules of its own (Anthropic, Gemini: ``_payload_api``), else as Chat Completions."""
    api, key = _payload_api(of)
    return lint_calls([Call(index=index, request={key: messages, **({"tools": tools} if tools else {})})
                       for index, messages, tools in payloads], profile, check_tools, of, api=api)


def _payload_api(of: Trace | None) -> tuple[str, str]:
    """(wire API, turns key) of a replayed payload: the trace's own when its provider has rules of its own
    (Anthropic's content blocks, Gemini's ``contents``), else Chat Completions."""
    from agent_core.lint.native import NATIVE_PROFILES, api_of_call

    for c in of.calls if of is not None else ():
        if c.purpose == "chat":
            api = api_of_call(c, c.request_head())
            if api.name in NATIVE_PROFILES and api.turns_key:
                return api.name, api.turns_key
            break
    return "chat-completions", "messages"


def lint_payloads(payloads: Sequence[tuple[int, Payload]], profile: str = "openai", check_tools: bool = True,
                  of: Trace | None = None) -> dict[int, list[Finding]]:
    """``lint_many`` for replayed payloads (``ReplayedCall.payload``): each is given to the linter as a call
    read from a file, so a payload that extends the one before (keep-all: one shared list) is compared by
    its runs and linted for its new messages only, and no call's list is built to find that out. A trace whose
    provider has rules of its own (Anthropic, Gemini) is linted one whole native body at a time instead."""
    if _payload_api(of)[0] != "chat-completions":
        return lint_many([(index, payload.messages(), payload.tools) for index, payload in payloads],
                         profile, check_tools, of)
    neutral = _Neutral()
    views = [(index, neutral.lint_view(p) if isinstance(p, EditedPayload) else p) for index, p in payloads]
    return _lint_windows(views, profile, check_tools, of)


def _lint_windows(payloads: Sequence[tuple[int, Payload]], profile: str, check_tools: bool,
                  of: Trace | None) -> dict[int, list[Finding]]:
    """Chat Completions payloads through ``lint.windows.WindowLint``, one per tools list: a payload is its
    leading system messages plus a slice of the history, and a window that slid is scanned only until it
    settles like the history's own scan (keep-all and grown windows: at once)."""
    from agent_core.apis.base import get_api
    from agent_core.lint.profiles import get_profile
    from agent_core.lint.scan import _stamp
    from agent_core.lint.windows import WindowLint

    api = get_api("chat-completions")
    prof = get_profile(profile)
    entries = (of.meta if of is not None else {}).setdefault("_lint_entries", {}).setdefault(api.name, {})
    linters: dict[str, WindowLint] = {}
    last: dict[str, Payload] = {}              # per tools list, the payload linted before
    keys: dict[int, tuple[Any, str]] = {}
    out: dict[int, list[Finding]] = {}
    for index, payload in payloads:
        tools = payload.tools
        known = keys.get(id(tools))
        if known is None or known[0] is not tools:
            known = keys[id(tools)] = (tools, message_key(tools) if tools else "")
        linter = linters.get(known[1])
        if linter is None:
            head = {"messages": None, **({"tools": tools} if tools is not None else {})}
            linter = linters[known[1]] = WindowLint(prof, api.chain(head), check_tools, api, entries)
        prev = last.get(known[1])
        last[known[1]] = payload
        if prev is not None and linter.ready and payload.added is prev.added and payload.starts_with(prev):
            out[index] = _stamp(linter.extended(payload.messages(len(prev)), len(payload)), index)
            continue
        messages = payload.messages()
        h = 0
        while h < len(messages) and type(messages[h]) is dict and messages[h].get("role") == "system":
            h += 1
        out[index] = _stamp(linter.lint(messages[:h], messages[h:]), index)
    return out


class _Neutral:
    """Which edits of an ``EditedPayload`` cannot change a Chat Completions finding, so the payload is linted as
    the unedited history it edits (one shared list that only grows: each call costs its new messages).

    An edit is neutral when the old and the new message differ only in a tool message's string content (a
    placeholder for a string result: the scan reads a result's role, id and whether content is missing or
    null) or in the ``arguments`` of well-formed tool calls (``facts.CALLS`` on both sides: the scan checks
    their ids, names and pairing, not the arguments). Any other edit: the payload is linted whole."""

    def __init__(self) -> None:
        self._checked: dict[int, tuple[list, int, bool]] = {}   # id(log) -> (log, entries checked, all neutral)

    def lint_view(self, p: EditedPayload) -> Payload:
        log = p.log
        seen = self._checked.get(id(log))
        if seen is None or seen[0] is not log:
            seen = (log, 0, True)
        _, done, ok = seen
        if p.k > done:
            ok = ok and all(_neutral(old, new) for _, old, _, new, _ in log[done:p.k])
            seen = (log, p.k, ok)
        self._checked[id(log)] = seen
        if ok and seen[1] >= p.k:
            return Payload([(0, len(p))] if len(p) else [], p.base, p.base_ids, p.tools)
        return Payload([(0, len(p))] if len(p) else [], p.messages(), p.ids(), p.tools)


def _neutral(old: Any, new: Any) -> bool:
    """See ``_Neutral``."""
    from agent_core.apis.base import get_api
    from agent_core.lint.facts import CALLS, entry_kind

    if type(old) is not dict or type(new) is not dict or old.keys() != new.keys():
        return False
    if old.get("role") == "tool":
        return (type(old.get("content")) is str and type(new.get("content")) is str
                and {k: v for k, v in old.items() if k != "content"} == {k: v for k, v in new.items() if k != "content"})
    if old.get("role") != "assistant" or type(old.get("tool_calls")) is not list:
        return False
    api = get_api("chat-completions")
    if entry_kind(api.entries([old], 0)[0]) != CALLS or entry_kind(api.entries([new], 0)[0]) != CALLS:
        return False
    return _without_arguments(old) == _without_arguments(new)


def _without_arguments(d: dict) -> dict:
    calls = [{**c, "function": {k: v for k, v in c["function"].items() if k != "arguments"}}
             if type(c) is dict and type(c.get("function")) is dict else c for c in d["tool_calls"]]
    return {**d, "tool_calls": calls}


def lint_calls(calls: Sequence[Call], profile: str = "openai", check_tools: bool = True,
               of: Trace | None = None, api: str | None = None) -> dict[int, list[Finding]]:
    """Findings per call, through ``lint.lint_trace`` so a payload that extends the previous one
    is linted for its new messages only (keep-all stays linear; calls read from a file compare runs).

    ``of``: the trace the payloads come from; its lint entries (``trace.meta["_lint_entries"]``) are
    shared, so replaying a trace under many policies derives each replayed message into the chain once.
    ``api``: the wire API every call is written for, when known (a replay's payloads are Chat Completions), so
    no full body is sniffed per call."""
    from agent_core.lint.scan import lint_trace

    out: dict[int, list[Finding]] = {c.index: [] for c in calls}
    # lint_trace resumes only when the tools are the same as the previous call's; the classic flow
    # alternates calls with and without tools, so lint each tools variant as its own sequence.
    groups: dict[str, list[Call]] = {}
    keys: dict[int, tuple[Any, str]] = {}    # one tools list object is shared by a file's calls
    for c in calls:
        tools = c.tools
        known = keys.get(id(tools))
        if known is None or known[0] is not tools:
            known = keys[id(tools)] = (tools, message_key(tools) if tools else "")
        groups.setdefault(known[1], []).append(c)
    for group in groups.values():
        shim = Trace(source="<replay>", format="replay", calls=group,
                     meta={"tools_recorded": check_tools, **({"_wire_api": api} if api else {})})
        if of is not None:
            shim.meta["_lint_entries"] = of.meta.setdefault("_lint_entries", {})
        for f in lint_trace(shim, profile=profile):
            out.setdefault(f.call, []).append(f)
    return out


def _recorded_cache(trace: Trace) -> dict:
    """The trace's recorded findings per profile (``trace.meta["_recorded_findings"]``)."""
    cache = trace.meta.get("_recorded_findings")
    if not isinstance(cache, dict) or cache.get("calls") is not trace.calls:
        # A copied meta (split_conversations) carries the cache of another trace's calls: start anew.
        cache = trace.meta["_recorded_findings"] = {"calls": trace.calls}
    return cache


def has_recorded_findings(trace: Trace, profile: str) -> bool:
    """Whether ``recorded_findings`` of ``trace`` for ``profile`` are made (or taken) already."""
    cache = trace.meta.get("_recorded_findings")
    return isinstance(cache, dict) and cache.get("calls") is trace.calls and profile in cache


def recorded_findings(trace: Trace, profile: str = "openai") -> dict[int, list[Finding]]:
    """Linter findings of the recorded chat payloads, per call; computed once per trace and profile."""
    cache = _recorded_cache(trace)
    if profile not in cache:
        check_tools = trace.meta.get("tools_recorded", True) is not False
        cache[profile] = lint_calls(chat_calls(trace), profile, check_tools, trace)
    return cache[profile]


def recorded_findings_json(trace: Trace, profile: str = "openai") -> dict:
    """``recorded_findings`` as JSON, for another process that parsed the same file with the same code
    (``take_recorded_findings``): a studio server takes them from its linting child."""
    found = recorded_findings(trace, profile)
    return {"calls": list(found), "findings": [f.export() for fs in found.values() for f in fs]}


def take_recorded_findings(trace: Trace, profile: str, doc: object) -> bool:
    """Give ``trace`` the recorded findings of ``doc`` (``recorded_findings_json``) for ``profile``, so they are not
    linted again; False, and nothing given, when ``doc`` does not fit the trace's chat calls or is ill-formed."""
    from dataclasses import fields

    from agent_core.lint.finding import Finding

    if not isinstance(doc, dict) or doc.get("calls") != [c.index for c in chat_calls(trace)] \
            or not isinstance(doc.get("findings"), list):
        return False
    names = {f.name for f in fields(Finding)}
    out: dict[int, list[Finding]] = {i: [] for i in doc["calls"]}
    for d in doc["findings"]:
        if not isinstance(d, dict) or set(d) != names or d.get("call") not in out:
            return False
        try:
            out[d["call"]].append(Finding(**d))
        except TypeError:
            return False
    _recorded_cache(trace).setdefault(profile, out)
    return True


def attach_recorded_findings(result: ReplayResult, trace: Trace, profile: str = "openai") -> ReplayResult:
    """Fill each replayed call's ``recorded_findings`` (for ``introduced``: what the policy broke)."""
    found = recorded_findings(trace, profile)
    for r in result.calls:
        r.recorded_findings = r.findings if r.same else found.get(r.call, [])
    return result
