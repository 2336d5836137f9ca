"""View models for the studio: plain data a page renders without thinking.

Everything the Streamlit pages show (summaries, the timeline, per-role token
series, cost, the largest messages, pages of long lists) is computed here, so
it is unit-tested without a browser and cached by the studio per trace.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from agent_core.core.msg import content_text, message_key
from agent_core.trace.model import Call, Trace, message_occurrences
from agent_core.trace.tokens import counter_for

ROLE_PARTS = ("system", "user", "assistant", "tool", "tools", "priming")
"""Stack order of the per-role token chart (``tools`` = tool definitions, ``priming`` = the 3 reply-priming
tokens), so a stack adds up to the whole request's count."""

# USD per 1M tokens (input, output), public list prices; the demo model is free.
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4-turbo": (10.00, 30.00),
    "gpt-4": (30.00, 60.00),
    "gpt-3.5-turbo": (0.50, 1.50),
    "chain-studio-demo-model": (0.0, 0.0),
}
DEFAULT_PRICE = PRICES["gpt-4o-mini"]

CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-4o-mini": 128_000,
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo-16k": 16_385,
    "gpt-3.5-turbo": 16_385,
    "chain-studio-demo-model": 32_768,
}
DEFAULT_CONTEXT_WINDOW = 128_000


def _lookup(table: dict, model: str | None, default):
    m = (model or "").lower()
    for prefix in ("openai/", "azure/", "ft:"):
        if m.startswith(prefix):
            m = m[len(prefix):]
    # Longest matching prefix, so gpt-4o-mini-2024-07-18 finds gpt-4o-mini, not gpt-4.
    for name in sorted(table, key=len, reverse=True):
        if m.startswith(name):
            return table[name]
    return default


def price_for(model: str | None) -> tuple[float, float]:
    """(input, output) USD per 1M tokens for a model name; gpt-4o-mini's when unknown."""
    return _lookup(PRICES, model, DEFAULT_PRICE)


def default_price_model(models: list[str]) -> str:
    """The PRICES entry to price a trace with: its first priced model, else gpt-4o-mini (the demo model is free)."""
    for m in models:
        for name in sorted(PRICES, key=len, reverse=True):
            if (m or "").lower().startswith(name) and PRICES[name] != (0.0, 0.0):
                return name
    return "gpt-4o-mini"


def context_window(model: str | None) -> int:
    """The model's context window in tokens (128k when unknown)."""
    return _lookup(CONTEXT_WINDOWS, model, DEFAULT_CONTEXT_WINDOW)


# --- pagination -----------------------------------------------------------

@dataclass(frozen=True)
class Page:
    """One page of a long list: show ``items[start:stop]``."""

    page: int
    """1-based page number (clamped into range)."""
    pages: int
    """How many pages there are (at least 1)."""
    start: int
    """Index of the first item on the page."""
    stop: int
    """One past the last item on the page."""
    total: int
    """How many items there are in all."""


def paginate(total: int, page: int = 1, page_size: int = 50) -> Page:
    """The slice bounds of page ``page`` of ``total`` items; out-of-range pages are clamped."""
    page_size = max(1, int(page_size))
    pages = max(1, math.ceil(total / page_size))
    page = min(max(1, int(page)), pages)
    start = (page - 1) * page_size
    return Page(page=page, pages=pages, start=start, stop=min(total, start + page_size), total=total)


def page_of(index: int, page_size: int = 50) -> int:
    """The 1-based page that holds item ``index``."""
    return index // max(1, page_size) + 1


# --- findings -------------------------------------------------------------

def findings_for(trace: Trace, profile: str = "openai") -> list[dict]:
    """Every linter finding of the trace as plain dicts (``Finding.export()``), call order."""
    from agent_core.lint.scan import lint_trace

    return [f.export() for f in lint_trace(trace, profile=profile)]


def findings_by_call(findings: list[dict]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for f in findings:
        if isinstance(f.get("call"), int):
            out.setdefault(f["call"], []).append(f)
    return out


def findings_by_message(findings: list[dict], call: int) -> dict[int | None, list[dict]]:
    """Findings of one call keyed by payload index (None = about the call as a whole)."""
    out: dict[int | None, list[dict]] = {}
    for f in findings:
        if f.get("call") == call:
            out.setdefault(f.get("index"), []).append(f)
    return out


# --- tokens ---------------------------------------------------------------

@dataclass(frozen=True)
class CallTokens:
    """Prompt tokens of one call, split by role, next to what the API reported."""

    call: int
    """Index of the call."""
    by_role: dict[str, int]
    """system / user / assistant / tool (results) / tools (definitions) / priming (+ any odd role)."""
    estimated: int
    """Our cookbook-formula count of the whole request."""
    reported: int | None
    """``usage.prompt_tokens`` from the response, if any."""
    completion: int | None
    """``usage.completion_tokens``, if any."""
    context_window: int
    """The model's context window (``context_window(model)``)."""


def _call_tokens(call: Call, parts: dict[str, int], model: str | None) -> CallTokens:
    usage = call.usage or {}
    completion = usage.get("completion_tokens")
    return CallTokens(call=call.index, by_role=parts, estimated=sum(parts.values()),
                      reported=call.reported_prompt_tokens,
                      completion=completion if isinstance(completion, int) else None,
                      context_window=context_window(model))


def call_tokens(call: Call) -> CallTokens:
    model = call.model
    return _call_tokens(call, counter_for(model).count_by_role(call.messages, call.tools), model)


def token_series(trace: Trace) -> list[CallTokens]:
    """One ``CallTokens`` per call, in call order.

    Consecutive calls counted with the same encoding go through the series
    counter, which only counts what each payload adds to the previous one.
    """
    out: list[CallTokens] = []
    calls = trace.calls
    start = 0
    while start < len(calls):
        counter = counter_for(calls[start].model)
        end = start
        while end < len(calls) and counter_for(calls[end].model) is counter:
            end += 1
        group = calls[start:end]
        for call, parts in zip(group, counter.count_calls_by_role(group)):
            out.append(_call_tokens(call, parts, call.model))
        start = end
    return out


def token_rows(series: list[CallTokens]) -> list[dict]:
    """Long-form rows (call, part, tokens) for the stacked per-role chart."""
    rows = []
    for t in series:
        for part in ROLE_PARTS:
            rows.append({"call": t.call, "part": part, "tokens": t.by_role.get(part, 0)})
        extra = sum(v for k, v in t.by_role.items() if k not in ROLE_PARTS)
        if extra:
            rows.append({"call": t.call, "part": "other", "tokens": extra})
    return rows


def cumulative_cost(trace: Trace, series: list[CallTokens], prices: dict[str, tuple[float, float]] | None = None,
                    price: tuple[float, float] | None = None) -> list[dict]:
    """Per call: prompt tokens (reported, else estimated), running totals and running cost in USD.

    Args:
        prices: per-model overrides of ``PRICES``.
        price: one (input, output) price for every call ("what would this cost on gpt-4o?").
    """
    rows, total_in, total_out, cost = [], 0, 0, 0.0
    for call, t in zip(trace.calls, series):
        price_in, price_out = price or (prices or {}).get(call.model or "", None) or price_for(call.model)
        prompt = t.reported if t.reported is not None else t.estimated
        completion = t.completion or 0
        total_in += prompt
        total_out += completion
        cost += (prompt * price_in + completion * price_out) / 1_000_000
        rows.append({"call": t.call, "prompt_tokens": prompt, "completion_tokens": completion,
                     "cumulative_prompt_tokens": total_in, "cumulative_completion_tokens": total_out,
                     "cumulative_cost_usd": round(cost, 6)})
    return rows


TRUNCATION_RATIO = 0.5
"""A reported prompt count below half our estimate means the provider cut the prompt."""


def truncation_suspects(series: list[CallTokens]) -> list[int]:
    """Calls whose reported prompt tokens are far below the estimate (silent truncation)."""
    return [t.call for t in series if t.reported is not None and t.estimated > 0
            and t.reported < TRUNCATION_RATIO * t.estimated]


@dataclass(frozen=True)
class BigMessage:
    """A distinct message body and its weight across the trace."""

    role: str
    """The message's role as recorded."""
    tokens: int
    """Tokens of one copy (cookbook formula)."""
    preview: str
    """The first 120 characters of its text (plain text, render escaped)."""
    first_call: int
    index: int
    """Position in the payload of ``first_call``."""
    calls: int
    """How many calls carried it (each one paid for it again)."""


def largest_messages(trace: Trace, limit: int = 10) -> list[BigMessage]:
    """The heaviest distinct messages, by tokens of one copy."""
    seen: dict[str, list] = {}
    key_of: dict[int, str] = {}   # a loaded trace shares one dict per distinct message: serialize it once
    models = {c.index: c.model for c in trace.calls}
    for first_call, i, m, times in message_occurrences(trace.calls):
        if not isinstance(m, dict):
            continue
        key = key_of.get(id(m))
        if key is None:
            key = key_of[id(m)] = message_key(m)
        if key in seen:
            seen[key][4] += times
            continue
        text = content_text(m.get("content"))
        if not text and m.get("tool_calls"):
            text = " ".join(str((c.get("function") or {}).get("name", "")) + str(
                (c.get("function") or {}).get("arguments", "")) for c in m["tool_calls"] if isinstance(c, dict))
        tokens = counter_for(models[first_call]).count_message(m, key)
        seen[key] = [str(m.get("role")), tokens, text[:120], first_call, times, i]
    items = [BigMessage(role=r, tokens=t, preview=p, first_call=c, index=i, calls=n)
             for r, t, p, c, n, i in seen.values()]
    items.sort(key=lambda b: (-b.tokens, b.first_call, b.index))
    return items[:limit]


def tool_result_share(series: list[CallTokens]) -> float:
    """Share of all prompt tokens taken by tool results (0..1)."""
    total = sum(t.estimated for t in series)
    return sum(t.by_role.get("tool", 0) for t in series) / total if total else 0.0


# --- summary and timeline -------------------------------------------------

@dataclass(frozen=True)
class TraceSummary:
    """The headline numbers of a trace."""

    source: str
    """Where the trace came from."""
    format: str
    """The detected input format."""
    calls: int
    """Number of API calls."""
    messages: int
    """Messages in the stream (or, if the loader built none, in the largest payload)."""
    prompt_tokens: int
    """Estimated prompt tokens summed over all calls (what the conversation paid)."""
    reported_prompt_tokens: int | None
    """Sum of ``usage.prompt_tokens`` over the calls that reported it (None if none did)."""
    findings: int
    """All linter findings under the chosen profile."""
    errors: int
    """Findings of severity ``error``."""
    failed_calls: int
    """Calls with an error or an HTTP status >= 400."""
    models: list[str] = field(default_factory=list)
    """Models seen, in order of first use."""
    warnings: list[str] = field(default_factory=list)
    """The loader's warnings (plain sentences)."""


def summarize(trace: Trace, series: list[CallTokens], findings: list[dict]) -> TraceSummary:
    reported = [t.reported for t in series if t.reported is not None]
    messages = len(trace.stream) or max((len(c.messages) for c in trace.calls), default=0)
    return TraceSummary(
        source=trace.source, format=trace.format, calls=len(trace.calls), messages=messages,
        prompt_tokens=sum(t.estimated for t in series), reported_prompt_tokens=sum(reported) if reported else None,
        findings=len(findings), errors=sum(1 for f in findings if f.get("severity") == "error"),
        failed_calls=sum(1 for c in trace.calls if c.failed), models=trace.models, warnings=list(trace.warnings))


def timeline_rows(trace: Trace, series: list[CallTokens], findings: list[dict]) -> list[dict]:
    """One row per API call, for the timeline table."""
    by_call = findings_by_call(findings)
    rows = []
    for call, t in zip(trace.calls, series):
        rules = sorted({f.get("rule", "?") for f in by_call.get(call.index, [])})
        rows.append({
            "call": call.index,
            "time": (call.started_at or "")[11:23] or "",
            "latency_ms": call.latency_ms,
            "model": call.model or "",
            "messages": len(call.messages),
            "tools": len(call.tools or []),
            "estimated": t.estimated,
            "reported": t.reported,
            "finish": call.finish_reason or ("error" if call.failed else ""),
            "status": call.status,
            "findings": ", ".join(rules),
            "purpose": call.purpose,
        })
    return rows


def tool_links(messages: list[dict]) -> tuple[dict[str, int], dict[str, int]]:
    """(call id -> index of the assistant message that made it, call id -> index of its tool result)."""
    made, answered = {}, {}
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            continue
        for c in m.get("tool_calls") or []:
            if isinstance(c, dict) and c.get("id"):
                made.setdefault(str(c["id"]), i)
        if m.get("role") == "tool" and m.get("tool_call_id"):
            answered.setdefault(str(m["tool_call_id"]), i)
    return made, answered
