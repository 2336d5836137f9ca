"""The studio opens every format the importers read, on every page."""
from __future__ import annotations

import json

import pytest
from conftest import PAGES

from agent_core.core.paths import SAMPLE_TRACES
from agent_core.trace.reader import read_trace

CLASSIC = read_trace(SAMPLE_TRACES / "classic_remembers.jsonl")


def _otlp(calls) -> str:
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
        InMemorySpanExporter,
    )

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    for call in calls:
        with tracer.start_as_current_span("chat") as span:
            parts = [{"role": m["role"], "parts": [{"type": "text", "content": m.get("content") or ""}]}
                     for m in call.messages if m["role"] in ("user", "assistant", "system")]
            span.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                                 "gen_ai.input.messages": json.dumps(parts, ensure_ascii=False)})
    return MessageToJson(encode_spans(exporter.get_finished_spans()))


def _formats() -> dict[str, str]:
    bodies = [c.request for c in CLASSIC.calls]
    formats = {
        "request.json": json.dumps(bodies[-1], ensure_ascii=False),
        "messages.json": json.dumps(bodies[-1]["messages"], ensure_ascii=False),
        "requests.jsonl": "\n".join(json.dumps(b, ensure_ascii=False) for b in bodies),
        "exchanges.jsonl": "\n".join(json.dumps({"request": c.request, "response": c.response}, ensure_ascii=False)
                                     for c in CLASSIC.calls),
        "legacy.json": json.dumps({"model": "gpt-3.5-turbo", "messages": [
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": None, "function_call": {"name": "get_weather", "arguments": "{}"}},
            {"role": "function", "name": "get_weather", "content": "sunny"}]}),
        "otel.json": _otlp(CLASSIC.calls),
    }
    formats["agentscope.json"] = json.dumps([
        {"id": "1", "name": "user", "role": "user", "content": "帮我查一下成都天气", "timestamp": "2026-01-01 10:00:00"},
        {"id": "2", "name": "Friday", "role": "assistant", "timestamp": "2026-01-01 10:00:01", "content": [
            {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "成都"}}]},
        {"id": "3", "name": "system", "role": "system", "timestamp": "2026-01-01 10:00:02", "content": [
            {"type": "tool_result", "id": "c1", "name": "get_weather", "output": "多云"}]},
        {"id": "4", "name": "Friday", "role": "assistant", "content": "成都多云。", "timestamp": "2026-01-01 10:00:03"}],
        ensure_ascii=False)
    return formats


@pytest.mark.parametrize("name", list(_formats()))
def test_every_imported_format_opens_on_every_page(open_studio, tmp_path, name):
    path = tmp_path / name
    path.write_text(_formats()[name], encoding="utf-8")
    before = path.read_bytes()
    at = open_studio(path)
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, (name, page, [e.message for e in at.exception])
    at.switch_page("screens/timeline.py").run()
    assert int(at.metric[0].value.replace(",", "")) >= 1, name
    assert path.read_bytes() == before          # the input is never modified
