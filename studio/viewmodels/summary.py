"""A trace's headline numbers, for the Traces screen's card and its table of traces."""
from __future__ import annotations

from dataclasses import dataclass, field

from agent_core.apis.responses import RESPONSES
from agent_core.trace.model import Trace
from agent_core.trace.responses_chain import effective_inputs

from .findings import problems
from .tokens import CallTokens


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
    """Messages in the stream (or, if the loader built none, in the largest payload; for Responses requests, the
    items of the largest effective input: the stored chain through ``previous_response_id`` plus the items sent)."""
    prompt_tokens: int
    """Estimated prompt tokens summed over all calls (what the conversation paid)."""
    reported_prompt_tokens: int | None
    """Sum of ``usage.prompt_tokens`` over the calls that reported it (None if none did)."""
    findings: int
    """Linter errors and warnings under the chosen profile (info notes are not problems)."""
    errors: int
    """Findings of severity ``error``."""
    failed_calls: int
    """Calls with an error or an HTTP status >= 400."""
    models: list[str] = field(default_factory=list)
    """Models seen, in order of first use."""


def summarize(trace: Trace, series: list[CallTokens], findings: list[dict]) -> TraceSummary:
    """The summary of ``trace``, from its token series and its findings as plain dicts."""
    reported = [t.reported for t in series if t.reported is not None]
    messages = trace.stream_length or max((len(c.messages) for c in trace.calls), default=0) or _input_items(trace)
    return TraceSummary(
        source=trace.source, format=trace.format, calls=len(trace.calls), messages=messages,
        prompt_tokens=sum(t.estimated for t in series), reported_prompt_tokens=sum(reported) if reported else None,
        findings=len(problems(findings)), errors=sum(1 for f in findings if f.get("severity") == "error"),
        failed_calls=sum(1 for c in trace.calls if c.failed), models=trace.models)


def _input_items(trace: Trace) -> int:
    """Input items of the trace's largest Responses effective input (stored chain through ``previous_response_id``
    + the items sent; what the Tokens page counts), 0 when it has no Responses call."""
    heads = [c.request_head() for c in trace.calls]
    if not any(RESPONSES.claims(h) for h in heads):
        return 0
    inputs = effective_inputs(zip(heads, (c.response for c in trace.calls)))
    return max((len(seen.items) for seen in inputs if seen is not None), default=0)
