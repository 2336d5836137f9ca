"""Responses API calls on the studio's pages: what the model saw, and their token counts.

A Responses call with ``previous_response_id`` sends only its new items; the
model sees the stored chain before them. ``what_the_model_saw`` lists the
effective input (``agent_core/trace/responses_chain.py``), each item marked
"sent in this request" or "from response resp_…", with its tokens, and a
silent-truncation note when the reported ``input_tokens`` are far below the
estimate of that input (``truncation: "auto"`` drops the oldest items without
saying which).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from agent_core.apis.responses import as_chat_messages, chat_tools, item_type, part_text
from agent_core.trace.model import Trace
from agent_core.trace.responses_chain import SENT, call_exchanges, effective_inputs
from agent_core.trace.tokens import REPLY_PRIMING, counter_for

from .tokens import TRUNCATION_RATIO, CallTokens

_ROLE_OF = {"function_call": "assistant", "reasoning": "assistant", "function_call_output": "tool"}


@dataclass(frozen=True)
class SeenRow:
    """One item of the effective input, for the Payload tab."""

    position: int
    """Its position in what the model saw."""
    kind: str
    """``message``, ``function_call``, ``function_call_output``, ``reasoning`` or another item type."""
    role: str
    """The role it counts as (a message's role; assistant for calls and reasoning; tool for outputs)."""
    origin: str
    """``sent in this request`` or ``from response resp_…`` (plain text, render escaped)."""
    sent: bool
    """Whether this request carried it."""
    path: str
    """Where it is recorded (``input[2]``, ``resp_….output[0]``)."""
    index: int | None
    """Its position in this request's ``input`` (findings point there), else None."""
    text: str
    """What it says, as plain text (a call: ``name(arguments)``)."""
    tokens: int
    """Estimated tokens (tiktoken, as a chat message)."""
    native: Any
    """The item itself."""


@dataclass(frozen=True)
class SeenView:
    """What the model saw on one Responses call."""

    instructions: str | None
    """The request's instructions (never carried over from the previous response)."""
    rows: list[SeenRow] = field(default_factory=list)
    """The effective input in order."""
    unresolved: str | None = None
    """A previous response id the trace does not hold: the model saw more than shown."""
    estimated: int = 0
    """Estimated input tokens of the whole effective input (instructions and tools included)."""
    reported: int | None = None
    """``usage.input_tokens`` of the response."""
    truncation: Any = None
    """The request's ``truncation`` setting as sent."""

    @property
    def tokens_by_type(self) -> dict[str, int]:
        """Estimated tokens per item type (``message``, ``function_call`` ...), in order of first appearance."""
        out: dict[str, int] = {}
        for r in self.rows:
            out[r.kind] = out.get(r.kind, 0) + r.tokens
        return out

    @property
    def silently_truncated(self) -> bool:
        """The reported input is far below the estimate: the server dropped items it does not name."""
        return self.reported is not None and self.estimated > 0 and self.reported < TRUNCATION_RATIO * self.estimated


def _text(item: Any) -> str:
    kind = item_type(item)
    if kind == "message":
        return part_text(item.get("content"))
    if kind == "function_call":
        return f"{item.get('name')}({item.get('arguments')})"
    if kind == "function_call_output":
        out = item.get("output")
        return out if isinstance(out, str) else part_text(out)
    return json.dumps(item, ensure_ascii=False, default=str)[:400]


def what_the_model_saw(trace: Trace, call: int) -> SeenView | None:
    """The effective input of call ``call``, None when it is not a Responses call."""
    calls = trace.calls[: call + 1]
    seen = effective_inputs(call_exchanges(calls))[-1] if calls else None
    if seen is None:
        return None
    c = trace.calls[call]
    counter = counter_for(c.model)
    rows = []
    for k, s in enumerate(seen.items):
        kind = item_type(s.item) or "not an item"
        role = str(s.item.get("role")) if kind == "message" else _ROLE_OF.get(kind, "other")
        messages = as_chat_messages([s.item])
        rows.append(SeenRow(position=k, kind=kind, role=role, origin=s.origin, sent=s.origin == SENT, path=s.path,
                            index=s.index, text=_text(s.item),
                            tokens=sum(counter.count_message(m) for m in messages), native=s.item))
    tools = c.request.get("tools") if isinstance(c.request, dict) else None
    instructions = seen.instructions if isinstance(seen.instructions, str) else None
    return SeenView(instructions=instructions, rows=rows, unresolved=seen.unresolved,
                    estimated=counter.count_payload(seen.chat_messages(), chat_tools(tools)),
                    reported=c.reported_prompt_tokens, truncation=seen.truncation)


def responses_token_series(trace: Trace, series: list[CallTokens]) -> list[CallTokens]:
    """``series`` with every Responses call counted on its effective input (by role), not on its empty
    ``messages``."""
    inputs = effective_inputs(call_exchanges(trace.calls))
    if all(s is None for s in inputs):
        return series
    out = []
    for t, c, seen in zip(series, trace.calls, inputs):
        if seen is None:
            out.append(t)
            continue
        tools = c.request.get("tools") if isinstance(c.request, dict) else None
        parts = counter_for(c.model).count_by_role(seen.chat_messages(), chat_tools(tools))
        parts["priming"] = REPLY_PRIMING
        output = (c.usage or {}).get("output_tokens")
        out.append(replace(t, by_role=parts, estimated=sum(parts.values()), reported=c.reported_prompt_tokens,
                           completion=output if isinstance(output, int) else t.completion))
    return out


def response_chain_rows(trace: Trace) -> list[dict]:
    """One row per Responses call: its response id and the call whose response it continues (exact lineage
    through ``previous_response_id``), with how many items it sent and how many the model saw. [] when the trace
    has no Responses call."""
    inputs = effective_inputs(call_exchanges(trace.calls))
    if all(s is None for s in inputs):
        return []
    by_id = {c.response.get("id"): c.index for c in trace.calls if isinstance(c.response, dict)
             and isinstance(c.response.get("id"), str)}
    rows = []
    for c, seen in zip(trace.calls, inputs):
        if seen is None:
            continue
        prev = seen.previous_response_id
        continues = "" if prev is None else (f"call {by_id[prev]}" if prev in by_id else "not in this trace")
        rid = c.response.get("id") if isinstance(c.response, dict) else None
        rows.append({"call": c.index, "response": rid if isinstance(rid, str) else "",
                     "previous_response_id": prev or "", "continues": continues,
                     "sent": sum(1 for s in seen.items if s.origin == SENT), "seen": len(seen.items)})
    return rows


def replay_rows(trace: Trace, context_window: int) -> list[dict]:
    """The Replay page on a Responses trace: per call, what keep-all and openai-truncation-auto (at
    ``context_window`` tokens) keep of its effective input, by whole item groups."""
    from agent_core.replay.responses import replay_responses, sent_here
    from agent_core.trim.items import TruncationAuto
    from agent_core.trim.window import KeepAll

    rows = []
    for policy in (KeepAll(), TruncationAuto(context_window=context_window)):
        for r in replay_responses(trace, policy):
            errors = [f for f in r.findings if f.severity == "error"]
            rows.append({"call": r.call, "policy": policy.name, "items": len(r.items),
                         "sent": sum(1 for s in r.items if sent_here(s)), "dropped": len(r.dropped),
                         "tokens": r.tokens, "reported": r.reported_input_tokens,
                         "rejected": errors[0].rule if errors else "", "reason": r.reason,
                         "unknown_chain": r.unresolved or ""})
    return rows


def is_responses_trace(trace: Trace) -> bool:
    """Every call is a Responses API call (the message replay has nothing to walk)."""
    from agent_core.replay.responses import is_responses_trace as _is

    return _is(trace)
