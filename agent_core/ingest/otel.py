"""OpenTelemetry exports (OTLP/JSON spans, logs, or both) as a trace.

Each span is read by the convention it was written in, richest source first:

- OpenInference LLM spans (``ingest/openinference.py``): the exact request body in ``input.value``, else the
  ``llm.input_messages.N.*`` attributes;
- OpenTelemetry GenAI spans (``ingest/otel_genai.py``): ``gen_ai.input.messages`` (current), ``gen_ai.prompt.N.*``
  (older OpenLLMetry), or no content on the span and the messages as log records with its span id
  (the official instrumentation's default mode).

A file of log records alone (``resourceLogs``) is read too: each span id's events are one call. Calls are
ordered by start time; conversations follow session ids, trace ids (when a trace holds several calls) or the
payloads' continuity (``payload_log``). What cannot be mapped, and what the instrumentation did not record, is
named in the trace's warnings.
"""
from __future__ import annotations

from typing import Any

from agent_core.trace.model import Trace

from . import openinference, otel_genai, otlp
from .otel_call import TelemetryCall, calls_to_trace

_SESSION_KEYS = ("session.id", "gen_ai.conversation.id", "traceloop.association.properties.session_id")


def looks_like(value: Any) -> bool:
    """An OTLP/JSON export of spans and/or logs (or a list of exports)."""
    return otlp.looks_like(value)


def events_by_span(records: list[dict]) -> dict[str | None, list[dict]]:
    """GenAI message log records grouped by the span id they belong to."""
    out: dict[str | None, list[dict]] = {}
    for r in records:
        if otlp.event_name(r) in otel_genai.EVENT_NAMES:
            out.setdefault(r.get("spanId"), []).append(r)
    return out


def span_call(span: dict, events: list[dict], warnings: list[str]) -> TelemetryCall | str:
    """The call one span records, else why it is not one: "no content" (a model span recorded without its
    messages) or "not a model call" (tools, agents, HTTP)."""
    attrs = otlp.attributes(span.get("attributes"))
    if openinference.is_openinference(attrs):
        call = openinference.call_from_span(span, attrs, warnings)
    elif otel_genai.has_messages(attrs) or events or otel_genai.is_model_span(attrs):
        found = otel_genai.call_from_span(span, attrs, events, warnings)
        if found is None:
            return "no content"
        call = found
    else:
        return "not a model call"
    call.start_ns = otlp.nanos(span, "startTimeUnixNano")
    call.trace_id, call.span_id = span.get("traceId"), span.get("spanId")
    call.root = not span.get("parentSpanId")
    session = next((attrs[k] for k in _SESSION_KEYS if isinstance(attrs.get(k), (str, int))), None)
    call.session = None if session is None else str(session)
    return call


def orphan_events_call(span_id: str | None, events: list[dict], warnings: list[str]) -> TelemetryCall | None:
    """The call of log events whose span is not in the data (a logs-only file, or the span never came)."""
    first = min(events, key=lambda r: otlp.nanos(r, "timeUnixNano", "observedTimeUnixNano"))
    call = otel_genai.call_from_span({"name": "(log events)", "spanId": span_id}, {}, events, warnings)
    if call is None:
        return None
    call.start_ns = otlp.nanos(first, "timeUnixNano", "observedTimeUnixNano")
    call.trace_id, call.span_id = first.get("traceId"), span_id
    call.unrecorded.append("the model and the span (only its log events were given)")
    return call


def extract(value: Any) -> tuple[list[TelemetryCall], list[str]]:
    """Every model call of an export (spans and/or logs), and the warnings."""
    warnings: list[str] = []
    spans = otlp.spans(value)
    events = events_by_span(otlp.log_records(value))
    calls: list[TelemetryCall] = []
    no_content = skipped = 0
    for span in spans:
        found = span_call(span, events.pop(span.get("spanId"), []), warnings)
        if isinstance(found, TelemetryCall):
            calls.append(found)
        elif found == "no content":
            no_content += 1
        else:
            skipped += 1
    for span_id, records in events.items():
        call = orphan_events_call(span_id, records, warnings)
        if call is not None:
            calls.append(call)
    if not spans and not events and not calls:
        warnings.append("the export holds no spans and no log records")
    if no_content:
        # Instrumentations record the messages only when asked (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT),
        # and the official one then writes them as log records: export the logs too.
        warnings.append(f"{no_content} span{'s carry' if no_content > 1 else ' carries'} no message content: "
                        "enable content capture in your instrumentation")
        warnings.append("the official instrumentation writes the messages as OTLP log records: export its logs "
                        "with its spans (or set OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental)")
    if skipped:
        warnings.append(f"{skipped} span(s) carry no gen_ai messages (tools, agents, HTTP) and were skipped")
    return calls, warnings


def to_trace(value: Any, source: str) -> Trace:
    """The trace of an OTLP/JSON export (see the module docstring)."""
    calls, warnings = extract(value)
    return calls_to_trace(calls, warnings, source, "otel-genai")
