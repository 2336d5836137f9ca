"""``chain-studio collect``: the OTLP/HTTP receiver's wire handling, live files, joining and refusals.

Spans are made by the real OpenTelemetry SDK and encoded by the real OTLP encoders (protobuf, and OTLP/JSON
through protobuf's JSON mapping); requests go over real HTTP. The instrumentations themselves are run in
test_otel_instrumentations.py.
"""
from __future__ import annotations

import gzip
import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from agent_core.ingest.detect import load_any
from agent_core.serve.collector import CollectorServer

pytest.importorskip("opentelemetry.sdk.trace", reason="opentelemetry-sdk is a test dependency")

USER = [{"role": "user", "parts": [{"type": "text", "content": "Hi, I am Ada."}]}]


def _export(turns: int, first: int = 0) -> bytes:
    """A protobuf ExportTraceServiceRequest of ``turns`` chat spans of one growing conversation (one trace)."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    for n in range(first, first + turns):
        messages = []
        for k in range(n + 1):
            messages.append({"role": "user", "parts": [{"type": "text", "content": f"question {k}"}]})
            if k < n:
                messages.append({"role": "assistant", "parts": [{"type": "text", "content": f"answer {k}"}]})
        with tracer.start_as_current_span("chat demo") as span:
            span.set_attributes({
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "demo",
                "gen_ai.input.messages": json.dumps(messages),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "finish_reason": "stop",
                                                       "parts": [{"type": "text", "content": f"answer {n}"}]}])})
    return encode_spans(exporter.get_finished_spans()).SerializeToString()


def _as_json(protobuf: bytes) -> bytes:
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    message = ExportTraceServiceRequest()
    message.ParseFromString(protobuf)
    return MessageToJson(message).encode()


def _post(url: str, data: bytes, ctype: str, encoding: str | None = None) -> tuple[int, bytes]:
    headers = {"Content-Type": ctype, **({"Content-Encoding": encoding} if encoding else {})}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_protobuf_json_and_gzip_each_append_live_to_one_trace(tmp_path):
    with CollectorServer(tmp_path, port=0) as server:
        assert server._server.server_address[0] == "127.0.0.1"       # loopback unless told otherwise
        url = f"{server.endpoint}/v1/traces"
        assert _post(url, _export(1), "application/x-protobuf") == (200, b"")
        files = server.collector.trace_files()
        assert len(files) == 1 and len(load_any(files[0]).calls) == 1    # readable while it grows
        assert _post(url, _as_json(_export(1, first=1)), "application/json")[0] == 200
        assert len(load_any(files[0]).calls) == 2
        assert _post(url, gzip.compress(_export(1, first=2)), "application/x-protobuf", "gzip")[0] == 200
        assert _post(url, gzip.compress(_as_json(_export(1, first=3))), "application/json", "gzip")[0] == 200
        trace = load_any(files[0])
    assert len(trace.calls) == 4 and server.collector.trace_files() == files     # one conversation, one file
    assert [m["content"] for m in trace.calls[3].messages][-1] == "question 3"
    assert trace.calls[3].reply["content"] == "answer 3"
    assert trace.meta["recorded_by"] == "chain-studio collect"
    index = [json.loads(line) for line in (tmp_path / "index.jsonl").read_text().splitlines()]
    assert [e["call"] for e in index] == [0, 1, 2, 3]


@pytest.mark.parametrize("path, data, ctype, encoding, status, said", [
    ("/v1/traces", b"{not json", "application/json", None, 400, "not valid JSON"),
    ("/v1/traces", b"\x1f\x8bnot gzip", "application/json", "gzip", 400, "gzip"),
    ("/v1/traces", b"\xff\xff\xff", "application/x-protobuf", None, 400, ""),
    ("/v1/logs", b'{"resourceSpans": []}', "application/json", None, 200, ""),
    ("/v1/metrics", b"{}", "application/json", None, 404, "/v1/traces and /v1/logs"),
    ("/v1/traces", b"{}", "application/json", "br", 400, "Content-Encoding"),
])
def test_refusals_are_one_line_and_the_receiver_keeps_going(tmp_path, path, data, ctype, encoding, status, said):
    with CollectorServer(tmp_path, port=0) as server:
        code, body = _post(server.endpoint + path, data, ctype, encoding)
        assert code == status
        if said:
            assert said in json.loads(body)["message"]
        assert _post(f"{server.endpoint}/v1/traces", _export(1), "application/x-protobuf")[0] == 200
        assert server.collector.calls_written == 1


def _log_export(span_id: str, trace_id: str, events: list[tuple[str, dict]]) -> bytes:
    """OTLP/JSON logs as the official instrumentation writes them (event name + body, tied by span id)."""
    def value(v):
        if isinstance(v, dict):
            return {"kvlistValue": {"values": [{"key": k, "value": value(x)} for k, x in v.items()]}}
        return {"stringValue": v} if isinstance(v, str) else {"intValue": str(v)}
    records = [{"eventName": name, "traceId": trace_id, "spanId": span_id, "timeUnixNano": str(1000 + i),
                "body": value(body)} for i, (name, body) in enumerate(events)]
    return json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]}).encode()


def _content_less_span(span_id: str, trace_id: str) -> bytes:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": trace_id, "spanId": span_id, "name": "chat demo", "startTimeUnixNano": "1000",
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                       {"key": "gen_ai.request.model", "value": {"stringValue": "demo"}}]}]}]}]}).encode()


def test_a_span_and_its_log_records_join_in_either_order(tmp_path):
    trace_id = "5b8efff798038103d269b633813fc60c"
    events = [("gen_ai.user.message", {"content": "Hi"}),
              ("gen_ai.choice", {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Hello"}})]
    with CollectorServer(tmp_path, port=0, grace=30) as server:
        # logs first, then the span
        assert _post(f"{server.endpoint}/v1/logs", _log_export("eee19b7ec3c1b174", trace_id, events),
                     "application/json")[0] == 200
        assert server.collector.calls_written == 0
        _post(f"{server.endpoint}/v1/traces", _content_less_span("eee19b7ec3c1b174", trace_id), "application/json")
        assert server.collector.calls_written == 1
        # the span first, then the logs
        _post(f"{server.endpoint}/v1/traces", _content_less_span("eee19b7ec3c1b175", trace_id), "application/json")
        assert server.collector.calls_written == 1
        _post(f"{server.endpoint}/v1/logs", _log_export("eee19b7ec3c1b175", trace_id, events), "application/json")
        assert server.collector.calls_written == 2
        # a span whose logs never come is written when the receiver stops, with a note
        _post(f"{server.endpoint}/v1/traces", _content_less_span("eee19b7ec3c1b176", trace_id), "application/json")
    assert any("no log records came" in w for w in server.collector.warnings)
    trace = load_any(server.collector.trace_files()[0])
    assert trace.calls[0].messages == [{"role": "user", "content": "Hi"}] and trace.calls[0].reply["content"] == "Hello"
    assert trace.meta["tools_recorded"] is False
    assert any("did not record tools" in w for w in trace.warnings)       # shown, from the header's import notes


def test_the_command_serves_until_sigterm_and_summarizes(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "agent_core.cli", "collect", "--port", "0", "--out", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        assert "OTLP/HTTP on http://127.0.0.1:" in first, first + proc.stderr.read()
        port = int(first.split("http://127.0.0.1:")[1].split(" ")[0])
        assert _post(f"http://127.0.0.1:{port}/v1/traces", _export(2), "application/x-protobuf")[0] == 200
        time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "collected 2 call(s) in 1 conversation(s)" in out
    assert len([p for p in tmp_path.glob("*.jsonl") if p.name != "index.jsonl"]) == 1


def test_calls_under_one_parent_span_are_one_conversation_even_when_unrelated(tmp_path):
    """An agent run (a parent span) groups its model calls by trace id, though their payloads share nothing."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    for run in ("first", "second"):
        with tracer.start_as_current_span(f"invoke_agent {run}"):
            for topic in ("weather", "time"):       # two unrelated payloads in one run
                with tracer.start_as_current_span("chat demo") as span:
                    span.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": "demo",
                                         "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
                                             {"type": "text", "content": f"{run}: {topic}?"}]}])})
    with CollectorServer(tmp_path, port=0) as server:
        assert _post(f"{server.endpoint}/v1/traces", encode_spans(exporter.get_finished_spans()).SerializeToString(),
                     "application/x-protobuf")[0] == 200
        files = server.collector.trace_files()
    traces = [load_any(p) for p in files]
    assert sorted(len(t.calls) for t in traces) == [2, 2]
    assert all(len({c.messages[0]["content"].split(":")[0] for c in t.calls}) == 1 for t in traces)
    assert all(p.name.startswith("session-trace-") for p in files)


def test_decoding_refuses_a_gzip_bomb_and_names_the_missing_protobuf_package(monkeypatch):
    from agent_core.ingest import otlp

    monkeypatch.setattr(otlp, "MAX_DECODED_BYTES", 1000)
    with pytest.raises(otlp.OtlpDecodeError, match="expands past"):
        otlp.decode(gzip.compress(b" " * 5000), kind="traces", content_encoding="gzip")
    assert otlp.decode(gzip.compress(b'{"resourceSpans": []}'), kind="traces", content_encoding="gzip") == \
        {"resourceSpans": []}
    monkeypatch.setitem(sys.modules, "opentelemetry.proto.collector.trace.v1.trace_service_pb2", None)
    with pytest.raises(otlp.OtlpDecodeError, match="pip install opentelemetry-proto"):
        otlp.decode(_export(1), kind="traces", content_type="application/x-protobuf")
