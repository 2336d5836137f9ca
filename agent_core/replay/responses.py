"""Replay of Responses API calls: the effective input of each call under a trim policy on item groups.

A Responses trace has no message stream to re-run: each call's effective input
is rebuilt from the bodies (``trace/responses_chain.py``: the stored chain of
``previous_response_id`` plus the request's items), then the policy keeps or
drops whole item groups (``apis/responses.item_groups``: a function_call with
its output, a reasoning item with its follower). keep-all gives back exactly
what the model saw, as far as the trace shows it (``unresolved`` says when a
previous response is not in the trace). Each replayed input is linted with the
Responses rules.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent_core.apis.responses import as_chat_messages, chat_tools
from agent_core.lint.finding import Finding
from agent_core.lint.profiles import get_profile
from agent_core.lint.responses import lint_effective
from agent_core.trace.model import Trace
from agent_core.trace.responses_chain import SENT, EffectiveInput, SeenItem, call_exchanges, effective_inputs
from agent_core.trace.tokens import counter_for, sampled_note, trace_sampled_texts
from agent_core.trim.base import TrimPolicy


@dataclass
class ReplayedResponsesCall:
    """One Responses call under a policy."""

    call: int
    """The call's index in the trace."""
    instructions: Any
    """The request's instructions (first in what the model sees)."""
    items: list[SeenItem]
    """The items the policy keeps, each with its origin."""
    dropped: list[SeenItem] = field(default_factory=list)
    """The items the policy dropped, oldest first."""
    reason: str = ""
    """Why they were dropped (empty when nothing was)."""
    tokens: int = 0
    """Estimated input tokens of the kept items with the instructions and tools (tiktoken)."""
    reported_input_tokens: int | None = None
    """``usage.input_tokens`` of the recorded response, when there is one."""
    unresolved: str | None = None
    """A previous response id the trace does not hold: the input before it is unknown."""
    findings: list[Finding] = field(default_factory=list)
    """Responses lint findings on the replayed input."""

    def native_items(self) -> list:
        return [s.item for s in self.items]


def _apply(policy: TrimPolicy, seen: EffectiveInput, tools: Any, model: str | None) -> tuple[list[int], str]:
    """Indexes of the items the policy keeps, and its reason."""
    items = seen.native_items()
    hook = getattr(policy, "apply_items", None)
    if callable(hook):
        return hook(items, instructions=seen.instructions, tools=tools, model=model)
    if policy.name == "keep-all":
        return list(range(len(items))), ""
    from agent_core.trim.base import PolicyError

    raise PolicyError(f"{policy.name} works on chat messages; on Responses item groups use keep-all or "
                      "openai-truncation-auto")


def replay_responses(trace: Trace, policy: TrimPolicy, *, profile: str = "openai") -> list[ReplayedResponsesCall]:
    """Every Responses call of ``trace`` under ``policy`` (other calls are left out)."""
    prof = get_profile(profile)
    out: list[ReplayedResponsesCall] = []
    for c, seen in zip(trace.calls, effective_inputs(call_exchanges(trace.calls))):
        if seen is None:
            continue
        tools = c.request.get("tools") if isinstance(c.request, dict) else None
        keep, reason = _apply(policy, seen, tools, c.model)
        kept = [seen.items[k] for k in keep]
        dropped = [s for k, s in enumerate(seen.items) if k not in set(keep)]
        replayed = EffectiveInput(call=seen.call, instructions=seen.instructions, items=kept,
                                  previous_response_id=seen.previous_response_id, unresolved=seen.unresolved)
        usage = c.response.get("usage") if isinstance(c.response, dict) else None
        reported = usage.get("input_tokens") if isinstance(usage, dict) else None
        out.append(ReplayedResponsesCall(
            call=c.index, instructions=seen.instructions, items=kept, dropped=dropped, reason=reason,
            tokens=counter_for(c.model).count_payload(as_chat_messages(replayed.native_items(), seen.instructions),
                                                      chat_tools(tools)),
            reported_input_tokens=reported if isinstance(reported, int) else None, unresolved=seen.unresolved,
            findings=lint_effective(replayed, prof, call=c.index)))
    return out


def sent_here(item: SeenItem) -> bool:
    """Whether the item was sent in the call's own request (not taken from a stored response)."""
    return item.origin == SENT


def is_responses_trace(trace: Trace) -> bool:
    """Whether every call of the trace is a Responses API call (then the message replay has nothing to walk)."""
    from agent_core.apis.responses import RESPONSES

    return bool(trace.calls) and all(RESPONSES.claims(c.request) for c in trace.calls)


def responses_report(trace: Trace, policy: TrimPolicy, fmt: str = "json", profile: str = "openai") -> str:
    """``chain-studio replay`` on a Responses trace: per call the items kept and dropped, tokens, findings."""
    import json

    from agent_core.trim.registry import describe

    rows = replay_responses(trace, policy, profile=profile)
    if fmt == "text":
        lines = [f"replay under {describe(policy)} (Responses API: each call's effective input, by item groups)"]
        for r in rows:
            sent = sum(1 for s in r.items if sent_here(s))
            line = (f"  call {r.call}: {len(r.items)} items ({sent} sent, {len(r.items) - sent} from stored responses), "
                    f"{r.tokens:,} tokens est." + (f", {r.reported_input_tokens:,} reported" if
                                                   r.reported_input_tokens is not None else ""))
            if r.dropped:
                line += f"; dropped {len(r.dropped)}: {r.reason}"
            if r.unresolved:
                line += f"; continues {r.unresolved}, not in this trace (its chain is unknown)"
            errors = [f for f in r.findings if f.severity == "error"]
            if errors:
                line += f"; REJECTED: {errors[0].rule} at {errors[0].path}"
            lines.append(line)
        if note := sampled_note(trace_sampled_texts(trace)):
            lines.append(f"note: {note}")
        return "\n".join(lines)
    return json.dumps({"policy": describe(policy), "api": "responses", "calls": [
        {"call": r.call, "items": [s.item for s in r.items], "origins": [s.origin for s in r.items],
         "dropped": [s.item for s in r.dropped], "reason": r.reason, "tokens": r.tokens,
         "reported_input_tokens": r.reported_input_tokens, "unresolved": r.unresolved,
         "findings": [f.export() for f in r.findings]} for r in rows]}, ensure_ascii=False, indent=1)
