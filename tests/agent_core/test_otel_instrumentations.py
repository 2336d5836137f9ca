"""The three OpenAI instrumentations people install, run for real against the demo model.

Each test instruments the real ``openai`` SDK with the real instrumentation package, runs a three-call
conversation (a tool round, then a follow-up) against the demo model over HTTP, and exports what the
instrumentation wrote twice: as an OTLP/JSON file (the real OTLP encoders) and over OTLP/HTTP to a running
``chain-studio collect`` receiver (the real OTLP exporters, protobuf, one of them gzip). Both imports must
hold the messages the demo server received (its log of raw request bodies is the independent source), the
tools wherever the instrumentation recorded them, and lint must find nothing on them that it does not find
on the bodies that were really sent.

The one normalisation, named: an assistant message with tool calls and ``"content": null`` equals the same
message without ``content`` (instrumentations record one or the other; the API treats them alike).
"""
from __future__ import annotations

import json
import time

import pytest

from agent_core.ingest.detect import load_any, parse_any
from agent_core.lint.scan import lint_request, lint_trace
from agent_core.serve.collector import CollectorServer

pytest.importorskip("opentelemetry.sdk.trace", reason="opentelemetry-sdk is a test dependency")
openai = pytest.importorskip("openai")

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city now.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
WEATHER = {"city": "Paris", "condition": "sunny", "temperature_c": 21, "humidity": 40}


def _conversation(client) -> None:
    """What an app does: a tool round, then a follow-up (tools on every call, a temperature on the first)."""
    messages = [{"role": "system", "content": "You are terse."},
                {"role": "user", "content": "What is the weather in Paris?"}]
    first = client.chat.completions.create(model="demo", messages=messages, tools=TOOLS, temperature=0.2)
    call = first.choices[0].message.tool_calls[0]
    messages.append({"role": "assistant", "content": None, "tool_calls": [call.model_dump()]})
    messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(WEATHER)})
    second = client.chat.completions.create(model="demo", messages=messages, tools=TOOLS)
    messages.append({"role": "assistant", "content": second.choices[0].message.content})
    messages.append({"role": "user", "content": "Thanks. My name is Ada."})
    client.chat.completions.create(model="demo", messages=messages, tools=TOOLS)


def _normal(messages: list[dict]) -> list[dict]:
    return [{k: v for k, v in m.items() if not (k == "content" and v is None and m.get("tool_calls"))}
            for m in messages]


def _run(instrument, uninstrument, demo_server, tmp_path, gzip_logs: bool = False, conversation=_conversation,
         calls: int = 3):
    """Run the conversation instrumented; returns (the file's trace, the receiver's traces, the sent bodies)."""
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    with CollectorServer(tmp_path / "collected", port=0, grace=5.0) as receiver:
        spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
        tracer_provider, logger_provider = TracerProvider(), LoggerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
        tracer_provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(
            endpoint=f"{receiver.endpoint}/v1/traces")))
        logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
        logger_provider.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(
            endpoint=f"{receiver.endpoint}/v1/logs", compression=Compression.Gzip if gzip_logs else None)))
        instrument(tracer_provider, logger_provider)
        try:
            conversation(openai.OpenAI(base_url=demo_server.base_url, api_key="sk-test", max_retries=0))
        finally:
            uninstrument()
        tracer_provider.force_flush()
        logger_provider.force_flush()
        deadline = time.monotonic() + 10
        while receiver.collector.calls_written < calls and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not receiver.notes, receiver.notes
    exports = [json.loads(MessageToJson(encode_spans(spans.get_finished_spans())))]
    if logs.get_finished_logs():
        exports.append(json.loads(MessageToJson(encode_logs(logs.get_finished_logs()))))
    path = tmp_path / "export.json"
    path.write_text(json.dumps(exports), encoding="utf-8")
    collected = [load_any(p) for p in sorted((tmp_path / "collected").glob("*.jsonl")) if p.name != "index.jsonl"]
    return load_any(path), collected, [json.loads(b) for b in demo_server.received]


def _check(trace, sent: list[dict], tools_recorded: bool, temperature_recorded: bool = True) -> None:
    assert len(trace.calls) == len(sent) == 3
    for call, body in zip(trace.calls, sent):
        assert _normal(call.request["messages"]) == _normal(body["messages"])
        assert call.request.get("tools") == (body["tools"] if tools_recorded else None)
        if temperature_recorded:
            assert call.request.get("temperature") == body.get("temperature")
    assert trace.calls[0].reply["tool_calls"][0]["function"]["name"] == "get_weather"
    assert trace.calls[0].response["choices"][0]["finish_reason"] == "tool_calls"
    assert (trace.meta.get("tools_recorded") is not False) == tools_recorded
    # no finding the instrumentation's omissions caused: nothing beyond what the real bodies give
    real = {(i, f.rule) for i, body in enumerate(sent) for f in lint_request(body, call=i)}
    assert {(f.call, f.rule) for f in lint_trace(trace)} <= real


def _one(collected):
    assert len(collected) == 1, [t.source for t in collected]     # one conversation, one file
    return collected[0]


def test_openinference_exact_bodies(demo_server, tmp_path):
    from openinference.instrumentation.openai import OpenAIInstrumentor

    inst = OpenAIInstrumentor()
    trace, collected, sent = _run(lambda tp, lp: inst.instrument(tracer_provider=tp), inst.uninstrument,
                                  demo_server, tmp_path)
    for t in (trace, _one(collected)):
        _check(t, sent, tools_recorded=True)
        assert [c.request for c in t.calls] == sent          # input.value is the exact body, key for key
    assert trace.meta["exact_bodies"] == 3 and "unrecorded" not in trace.meta


def test_openinference_without_input_value_rebuilds_from_messages(demo_server, tmp_path):
    """Other OpenInference instrumentations (and truncating pipelines) leave no JSON input.value: the real
    spans, with input.* and output.* removed, still rebuild every call from the llm.* attributes."""
    from openinference.instrumentation.openai import OpenAIInstrumentor

    inst = OpenAIInstrumentor()
    _, _, sent = _run(lambda tp, lp: inst.instrument(tracer_provider=tp), inst.uninstrument,
                      demo_server, tmp_path)
    text = (tmp_path / "export.json").read_text(encoding="utf-8")
    exports = json.loads(text)
    for rs in exports[0]["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                span["attributes"] = [a for a in span["attributes"] if not a["key"].startswith(("input.", "output."))]
    trace = parse_any(json.dumps(exports), "no-input-value.json")
    _check(trace, sent, tools_recorded=True)
    assert trace.meta["exact_bodies"] == 0 and any("rebuilt from recorded messages" in w for w in trace.warnings)


def test_official_openai_v2_default_mode_messages_in_log_records(demo_server, tmp_path, monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    inst = OpenAIInstrumentor()
    trace, collected, sent = _run(lambda tp, lp: inst.instrument(tracer_provider=tp, logger_provider=lp),
                                  inst.uninstrument, demo_server, tmp_path, gzip_logs=True)
    for t in (trace, _one(collected)):
        _check(t, sent, tools_recorded=False)      # it does not record tool definitions
        assert "tools" in t.meta["unrecorded"]
    # the logs file alone (resourceLogs) imports too: the messages without the span's model and usage
    logs_only = json.loads((tmp_path / "export.json").read_text(encoding="utf-8"))[1:]
    alone = parse_any(json.dumps(logs_only), "logs.json")
    assert [_normal(c.request["messages"]) for c in alone.calls] == [_normal(b["messages"]) for b in sent]
    assert any("only its log events" in w for w in alone.warnings)
    # without the logs, the spans alone say how to get the messages
    spans_only = json.loads((tmp_path / "export.json").read_text(encoding="utf-8"))[:1]
    with pytest.raises(Exception, match="no message content"):
        parse_any(json.dumps(spans_only), "spans-only.json")


def _unwrap_openai_sdk() -> None:
    """Traceloop 0.62's ``uninstrument`` passes ("openai.resources.chat.completions", "Completions.create") to
    ``unwrap``, which splits the module path and finds nothing: the SDK stays wrapped, and every later openai
    call in the process would export to this test's dead endpoint. Put the SDK's own methods back."""
    import inspect
    import sys

    import wrapt

    for name, module in list(sys.modules.items()):
        if not name.startswith("openai.resources") or module is None:
            continue
        for cls in list(vars(module).values()):
            if inspect.isclass(cls) and cls.__module__ == name:
                for attr, value in list(vars(cls).items()):
                    if isinstance(value, wrapt.FunctionWrapper):
                        setattr(cls, attr, value.__wrapped__)


@pytest.mark.parametrize("events", [False, True], ids=["span-attributes", "log-events"])
def test_traceloop_tools_keep_their_wrapper(demo_server, tmp_path, events):
    """Traceloop/OpenLLMetry: the current conventions as span attributes (its default), and its events mode
    (``use_attributes=False``: the messages as log records)."""
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    inst = OpenAIInstrumentor(use_attributes=not events)

    def uninstrument():
        inst.uninstrument()
        _unwrap_openai_sdk()

    trace, collected, sent = _run(lambda tp, lp: inst.instrument(tracer_provider=tp, logger_provider=lp),
                                  uninstrument, demo_server, tmp_path)
    import wrapt
    from openai.resources.chat import completions

    assert not isinstance(vars(completions.Completions)["create"], wrapt.FunctionWrapper)   # nothing left behind
    kind = "(gen_ai events)" if events else "(gen_ai)"
    assert any(kind in w for w in trace.warnings), trace.warnings
    for t in (trace, _one(collected)):
        _check(t, sent, tools_recorded=not events)      # its events mode does not record tool definitions
        if not events:
            assert t.calls[0].request["tools"][0]["function"]["name"] == "get_weather"    # sendable as it is
        else:   # it drops the tool_call_id of tool results: paired by position, and labelled as inferred
            assert any("tool_call_id" in w and "inferred" in w for w in t.warnings), t.warnings


def test_official_openai_v2_span_mode(demo_server, tmp_path, monkeypatch):
    """The newer span mode (messages as gen_ai.input.messages on the span). The library reads the opt-in once
    per process, so the test re-reads it (and restores the default mode for the other tests)."""
    from opentelemetry.instrumentation._semconv import _OpenTelemetrySemanticConventionStability as stability
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    stability._initialized = False
    stability._initialize()
    try:
        inst = OpenAIInstrumentor()
        trace, collected, sent = _run(lambda tp, lp: inst.instrument(tracer_provider=tp, logger_provider=lp),
                                      inst.uninstrument, demo_server, tmp_path)
    finally:
        monkeypatch.delenv("OTEL_SEMCONV_STABILITY_OPT_IN")
        stability._initialized = False
        stability._initialize()
    for t in (trace, _one(collected)):
        _check(t, sent, tools_recorded=False)
        assert t.calls[0].messages[0] == {"role": "system", "content": "You are terse."}


def test_openinference_sessions_make_one_trace_each(demo_server, tmp_path):
    """Two users' identical conversations, told apart only by OpenInference's session.id: one file each."""
    from openinference.instrumentation import using_session
    from openinference.instrumentation.openai import OpenAIInstrumentor

    def two_sessions(client):
        for user in ("alice", "bob"):
            with using_session(f"chat-{user}"):
                _conversation(client)

    inst = OpenAIInstrumentor()
    trace, collected, sent = _run(lambda tp, lp: inst.instrument(tracer_provider=tp), inst.uninstrument,
                                  demo_server, tmp_path, conversation=two_sessions, calls=6)
    names = sorted(t.source.rsplit("/", 1)[-1] for t in collected)
    assert names == ["session-chat-alice.jsonl", "session-chat-bob.jsonl"]
    for t in collected:
        assert [c.request for c in t.calls] == sent[:3]
    assert [sorted(c) for c in trace.meta["conversation_calls"]] == [[0, 1, 2], [3, 4, 5]]
