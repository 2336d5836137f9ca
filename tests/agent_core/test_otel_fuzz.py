"""Untrusted OTLP-shaped input (files and receiver bodies) never crashes the telemetry importers: each
input either imports or is refused with one ``MalformedTraceError``."""
from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_core.core.errors import MalformedTraceError
from agent_core.ingest.detect import parse_any
from agent_core.serve.collector import Collector

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 2**70), st.text(max_size=8),
                    st.sampled_from(["gen_ai.input.messages", "gen_ai.choice", "LLM", "1000", "[]", "{}",
                                     '[{"role": "user", "parts": [{"type": "text", "content": "x"}]}]']))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.sampled_from(["stringValue", "intValue", "kvlistValue", "arrayValue", "values", "key",
                                     "value", "role", "content", "parts", "type"]), inner, max_size=3)), max_leaves=12)
attribute = st.fixed_dictionaries({"key": st.sampled_from([
    "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.definitions", "gen_ai.request.model",
    "openinference.span.kind", "input.value", "input.mime_type", "llm.input_messages.0.message.role",
    "llm.tools.0.tool.json_schema", "session.id", "gen_ai.prompt.0.role"]), "value": values})
span = st.fixed_dictionaries({}, optional={
    "traceId": st.one_of(st.text(max_size=32), st.integers()), "spanId": st.text(max_size=16),
    "parentSpanId": values, "name": values, "startTimeUnixNano": values, "status": values,
    "attributes": st.lists(st.one_of(attribute, values), max_size=4)})
record = st.fixed_dictionaries({}, optional={
    "eventName": st.sampled_from(["gen_ai.user.message", "gen_ai.choice", "other"]), "spanId": values,
    "timeUnixNano": values, "body": values, "attributes": st.lists(st.one_of(attribute, values), max_size=2)})
export = st.one_of(
    st.fixed_dictionaries({"resourceSpans": st.lists(st.fixed_dictionaries(
        {"scopeSpans": st.lists(st.fixed_dictionaries({"spans": st.lists(span, max_size=3)}), max_size=2)}),
        max_size=2)}),
    st.fixed_dictionaries({"resourceLogs": st.lists(st.fixed_dictionaries(
        {"scopeLogs": st.lists(st.fixed_dictionaries({"logRecords": st.lists(record, max_size=3)}), max_size=2)}),
        max_size=2)}))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(export)
def test_any_otlp_shaped_input_imports_or_is_refused_in_one_line(value):
    try:
        parse_any(json.dumps(value), "fuzz.json")
    except MalformedTraceError:
        pass


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(export)
def test_the_receiver_accepts_or_refuses_any_otlp_shaped_export(tmp_path_factory, value):
    collector = Collector(tmp_path_factory.mktemp("c"), grace=0)
    try:
        collector.accept("traces" if "resourceSpans" in value else "logs", value)
        collector.flush(force=True)
    finally:
        collector.close()
