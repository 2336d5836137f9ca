"""The Tokens screen's numbers: per-role prompt tokens per call, running cost, truncation, heavy messages."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agent_core.core import models
from agent_core.core.msg import content_text, message_key
from agent_core.trace.model import Call, Trace, message_occurrences
from agent_core.trace.tokens import counter_for, trace_sampled_texts
from studio.components.safe import function_of, tool_calls_of

ROLE_PARTS = ("system", "user", "assistant", "tool", "tools", "priming")
"""Stack order of the per-role token chart (``tools`` = tool definitions, ``priming`` = the 3 reply-priming
tokens), so a stack adds up to the whole request's count."""

TRUNCATION_RATIO = 0.5
"""A reported prompt count below half our estimate means the provider cut the prompt."""


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
    """The model's context window, from the model catalogue."""


def _call_tokens(call: Call, parts: dict[str, int], windows: dict | None = None) -> CallTokens:
    """``windows``: model -> context window, filled as it goes (one catalogue lookup per model, not per call)."""
    usage = call.usage or {}
    completion = usage.get("completion_tokens")
    model = call.model
    window = windows.get(model) if windows is not None else None
    if window is None:
        window = models.context_window(model)
        if windows is not None:
            windows[model] = window
    return CallTokens(call=call.index, by_role=parts, estimated=sum(parts.values()),
                      reported=call.reported_prompt_tokens,
                      completion=completion if isinstance(completion, int) else None,
                      context_window=window)


def token_series(trace: Trace, step: int | None = None,
                 progress: Callable[[list[CallTokens]], object] | None = None) -> list[CallTokens]:
    """One ``CallTokens`` per call, in call order.

    Consecutive calls counted with the same encoding go through the series
    counter, which only counts what each payload adds to the previous one.
    With ``progress``, it is called with the series so far every ``step`` calls; the next step goes on from
    the last call counted (recounting each step's first call whole took 0.25 s at 25,000 calls with every
    message's count cached, every 2,500 calls; 1.3 s every 500).
    """
    out: list[CallTokens] = []
    calls = trace.calls
    counters = [counter_for(call.model) for call in calls]     # Call.model reads two bodies: once per call
    windows: dict = {}
    start, after = 0, None
    while start < len(calls):
        counter = counters[start]
        end = start
        while end < len(calls) and counters[end] is counter and (progress is None or end - start < (step or 1)):
            end += 1
        group = calls[start:end]
        going_on = after is not None and counters[start - 1] is counter
        counted = counter.count_calls_by_role(group, after if going_on else None)
        for call, parts in zip(group, counted):
            out.append(_call_tokens(call, parts, windows))
        after = (group[-1], counted[-1])
        if progress is not None:
            progress(out)
        start = end
    return out


def reported_field(trace: Trace) -> str:
    """The usage key the reported counts come from: Chat Completions reports ``usage.prompt_tokens``, the
    Responses and Anthropic APIs ``usage.input_tokens`` (``Call.reported_prompt_tokens`` reads either)."""
    keys = [k for k in ("prompt_tokens", "input_tokens") if any(k in (c.usage or {}) for c in trace.calls)]
    return " / ".join(f"usage.{k}" for k in keys) or "usage.prompt_tokens"


def sampled_texts(trace: Trace) -> int:
    """Texts over 2M characters whose tokens are counted from a sample: the page says its counts are estimated."""
    return trace_sampled_texts(trace)


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


def cumulative_cost(series: list[CallTokens], pricing: models.Pricing) -> list[dict]:
    """Per call: prompt tokens (reported, else estimated), running totals and running cost in USD.

    Every call is priced with ``pricing`` (``models.price_as``), whose label
    the screen shows next to the cost.
    """
    rows, total_in, total_out = [], 0, 0
    for t in series:
        prompt = t.reported if t.reported is not None else t.estimated
        completion = t.completion or 0
        total_in += prompt
        total_out += completion
        rows.append({"call": t.call, "prompt_tokens": prompt, "completion_tokens": completion,
                     "cumulative_prompt_tokens": total_in, "cumulative_completion_tokens": total_out,
                     "cumulative_cost_usd": round(pricing.facts.cost(total_in, total_out), 6)})
    return rows


def truncation_suspects(series: list[CallTokens]) -> list[int]:
    """Calls whose reported prompt tokens are far below the estimate (silent truncation)."""
    return [t.call for t in series if t.reported is not None and t.estimated > 0
            and t.reported < TRUNCATION_RATIO * t.estimated]


def tool_result_share(series: list[CallTokens]) -> float:
    """Share of all prompt tokens taken by tool results (0..1)."""
    total = sum(t.estimated for t in series)
    return sum(t.by_role.get("tool", 0) for t in series) / total if total else 0.0


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
    """The first call that carried it."""
    index: int
    """Position in the payload of ``first_call``."""
    calls: int
    """How many calls carried it (each one paid for it again)."""


def largest_messages(trace: Trace, limit: int = 10) -> list[BigMessage]:
    """The heaviest distinct messages, by tokens of one copy.

    Equal bodies have equal counts under one encoding, so only the messages as heavy as the ``limit``-th
    distinct one are serialized to find which copies are the same body (not every distinct message of a
    25,000-call trace); a trace of several encodings compares every body (``_largest_by_body``)."""
    call_models = {c.index: c.model for c in trace.calls}
    counters = {m: counter_for(m) for m in set(call_models.values())}
    objects: dict[int, list] = {}      # id(message) -> [message, first call, index, calls]: a loaded trace shares
    for first_call, i, m, times in message_occurrences(trace.calls):   # one dict per distinct body
        if not isinstance(m, dict):
            continue
        known = objects.get(id(m))
        if known is not None:
            known[3] += times
        else:
            objects[id(m)] = [m, first_call, i, times]
    if len({id(c) for c in counters.values()}) > 1:
        return _largest_by_body(objects.values(), call_models, limit)
    counter = next(iter(counters.values()), None)
    if counter is None:
        return []
    ranked = sorted(((counter.count_message(m), first_call, i, m, times) for m, first_call, i, times in
                     objects.values()), key=lambda r: (-r[0], r[1], r[2]))
    groups: dict[str, list] = {}
    floor = 0
    for tokens, first_call, i, m, times in ranked:
        if len(groups) >= limit and tokens < floor:
            break                       # lighter bodies cannot be one of the top ``limit`` nor join one
        key = message_key(m)
        if key in groups:
            groups[key][4] += times
            continue
        groups[key] = [m, tokens, first_call, i, times]
        if len(groups) == limit:
            floor = tokens
    return _big(groups.values(), limit)


def _preview(m: dict) -> str:
    text = content_text(m.get("content"))
    if not text and tool_calls_of(m):
        text = " ".join(str(function_of(c).get("name", "")) + str(function_of(c).get("arguments", ""))
                        for c in tool_calls_of(m))
    return text[:120]


def _big(groups, limit: int) -> list[BigMessage]:
    items = [BigMessage(role=str(m.get("role")), tokens=t, preview=_preview(m), first_call=c, index=i, calls=n)
             for m, t, c, i, n in groups]
    items.sort(key=lambda b: (-b.tokens, b.first_call, b.index))
    return items[:limit]


def _largest_by_body(objects, call_models: dict, limit: int) -> list[BigMessage]:
    """Every distinct message's body serialized and merged (the count of its first appearance)."""
    groups: dict[str, list] = {}
    for m, first_call, i, times in sorted(objects, key=lambda o: (o[1], o[2])):
        key = message_key(m)
        if key in groups:
            groups[key][4] += times
            continue
        groups[key] = [m, counter_for(call_models[first_call]).count_message(m, key), first_call, i, times]
    return _big(groups.values(), limit)


CHART_POINTS = 500
"""Beyond this many calls a chart shows bins of consecutive calls (the browser draws 500 bars, not 25,000)."""


@dataclass(frozen=True)
class CallBin:
    """Consecutive calls drawn as one bar or point: their mean per role, and the exact range on hover."""

    first: int
    """The first call in the bin."""
    last: int
    """The last call in the bin."""
    by_role: dict[str, float]
    """Mean prompt tokens per role part (``ROLE_PARTS`` plus ``other``) over the bin's calls."""
    estimated_min: int
    """The smallest whole-request estimate in the bin."""
    estimated_max: int
    """The largest whole-request estimate in the bin."""
    estimated_mean: float
    """The mean whole-request estimate."""
    reported_mean: float | None
    """The mean ``usage.prompt_tokens`` of the calls that reported it (None: none did)."""
    context_window: int
    """The smallest context window among the bin's calls."""

    @property
    def middle(self) -> float:
        """Where the bin sits on a call axis."""
        return (self.first + self.last) / 2


def call_bins(series: list[CallTokens], max_points: int = CHART_POINTS) -> list[CallBin]:
    """``series`` grouped into at most ``max_points`` bins of consecutive calls (one call per bin when it fits),
    so a chart of 25,000 calls costs the browser what one of 500 does."""
    n = len(series)
    size = max(1, -(-n // max_points))
    out = []
    for start in range(0, n, size):
        group = series[start:start + size]
        parts: dict[str, float] = {}
        for t in group:
            for part, v in t.by_role.items():
                key = part if part in ROLE_PARTS else "other"
                parts[key] = parts.get(key, 0) + v
        est = [t.estimated for t in group]
        rep = [t.reported for t in group if t.reported is not None]
        out.append(CallBin(first=group[0].call, last=group[-1].call,
                           by_role={k: v / len(group) for k, v in parts.items()},
                           estimated_min=min(est), estimated_max=max(est), estimated_mean=sum(est) / len(est),
                           reported_mean=sum(rep) / len(rep) if rep else None,
                           context_window=min(t.context_window for t in group)))
    return out


def sample_rows(rows: list[dict], max_points: int = CHART_POINTS) -> list[dict]:
    """At most ``max_points`` of ``rows`` (every k-th, always the last): for running totals, whose value at
    the calls shown is exact."""
    if len(rows) <= max_points:
        return rows
    step = -(-len(rows) // max_points)
    picked = rows[::step]
    return picked if picked[-1] is rows[-1] else picked + [rows[-1]]
