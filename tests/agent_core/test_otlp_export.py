"""The OTLP exporter: spans checked against the OpenTelemetry GenAI JSON schemas and the SDK's own names.

Expected values come from outside our code: the conventions' JSON schemas (vendored in
tests/fixtures/otel_semconv/), the attribute names and values of ``opentelemetry-semantic-conventions``, the
protobuf decoder of ``opentelemetry-proto`` (the live export is received by a small OTLP/HTTP server here), and
the recorded bodies themselves (a call's span must carry exactly what was sent, down to the SHA-256 of the
bytes). The real Phoenix round trip is in test_phoenix.py.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from agent_core.core.paths import PROJECT_ROOT
from agent_core.ingest.detect import load_any

jsonschema = pytest.importorskip("jsonschema")
pytest.importorskip("opentelemetry.sdk.trace", reason="opentelemetry-sdk is a test dependency")
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as GEN_AI

SCHEMAS = PROJECT_ROOT / "tests" / "fixtures" / "otel_semconv"
ORPHAN = PROJECT_ROOT / "sample_traces" / "naive_trim_orphan.jsonl"


def _schema(name: str) -> dict:
    return json.loads((SCHEMAS / f"gen-ai-{name}.json").read_text(encoding="utf-8"))


def _value(v: dict):
    if "arrayValue" in v:
        return [_value(x) for x in v["arrayValue"].get("values", [])]
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    return int(v["intValue"]) if "intValue" in v else None


def _spans(document: dict) -> list[dict]:
    return [s for r in document["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]]


def _attrs(span: dict) -> dict:
    return {a["key"]: _value(a["value"]) for a in span.get("attributes", [])}


def _export(path: Path, tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / "spans.json"
    proc = subprocess.run([sys.executable, "-m", "agent_core.cli", "export", str(path), "--as", "otlp", "-o", str(out),
                           *extra], check=False, capture_output=True, text=True, timeout=120, cwd=PROJECT_ROOT)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text(encoding="utf-8"))


def _expected_parts(message: dict) -> list[tuple]:
    """What the conventions say a Chat Completions message becomes, read from the recorded message itself."""
    if message["role"] == "tool":
        return [("tool_call_response", message["tool_call_id"], message["content"])]
    parts = [("text", message["content"])] if isinstance(message.get("content"), str) else []
    parts += [("tool_call", tc["id"], tc["function"]["name"], tc["function"]["arguments"])
              for tc in message.get("tool_calls") or []]
    return parts


def _got_parts(message: dict) -> list[tuple]:
    out = []
    for p in message["parts"]:
        if p["type"] == "text":
            out.append(("text", p["content"]))
        elif p["type"] == "tool_call":
            out.append(("tool_call", p["id"], p["name"], p["arguments"]))
        else:
            out.append((p["type"], p["id"], p["response"]))
    return out


def test_each_call_is_a_genai_span_that_matches_the_schemas_and_the_recorded_payload(tmp_path):
    trace = load_any(ORPHAN)
    spans = _spans(_export(ORPHAN, tmp_path))
    calls = [s for s in spans if s.get("parentSpanId")]
    assert len(calls) == len(trace.calls) == 7 and sum(c.tools is not None for c in trace.calls) >= 5
    inputs, outputs, tools = _schema("input-messages"), _schema("output-messages"), _schema("tool-definitions")
    for span, call in zip(sorted(calls, key=lambda s: _attrs(s)["chain_studio.call"]), trace.calls):
        a = _attrs(span)
        assert a[GEN_AI.GEN_AI_OPERATION_NAME] == GEN_AI.GenAiOperationNameValues.CHAT.value
        assert a[GEN_AI.GEN_AI_PROVIDER_NAME] == GEN_AI.GenAiProviderNameValues.OPENAI.value
        assert a[GEN_AI.GEN_AI_REQUEST_MODEL] == call.request["model"]
        assert span["name"] == f"chat {call.request['model']}"
        assert span["kind"] == 3                                  # SPAN_KIND_CLIENT
        sent = json.loads(a[GEN_AI.GEN_AI_INPUT_MESSAGES])
        jsonschema.validate(sent, inputs)
        assert [m["role"] for m in sent] == [m["role"] for m in call.messages]
        assert [_got_parts(m) for m in sent] == [_expected_parts(m) for m in call.messages]
        assert GEN_AI.GEN_AI_SYSTEM_INSTRUCTIONS not in a         # Chat Completions: the system message is history
        if call.tools is None:
            assert GEN_AI.GEN_AI_TOOL_DEFINITIONS not in a
        else:
            declared = json.loads(a[GEN_AI.GEN_AI_TOOL_DEFINITIONS])
            jsonschema.validate(declared, tools)
            assert [(d["name"], d["parameters"]) for d in declared] == [
                (t["function"]["name"], t["function"]["parameters"]) for t in call.tools]
        assert json.loads(a["input.value"]) == call.request      # the exact body, key order and all
        if call.status == 200:
            received = json.loads(a[GEN_AI.GEN_AI_OUTPUT_MESSAGES])
            jsonschema.validate(received, outputs)
            assert _got_parts(received[0]) == _expected_parts(call.reply)
            assert a[GEN_AI.GEN_AI_USAGE_INPUT_TOKENS] == call.usage["prompt_tokens"]
            assert a[GEN_AI.GEN_AI_USAGE_OUTPUT_TOKENS] == call.usage["completion_tokens"]
            assert a[GEN_AI.GEN_AI_RESPONSE_FINISH_REASONS] == [
                {"tool_calls": "tool_call"}.get(call.finish_reason, call.finish_reason)]
            jsonschema.validate([{**received[0], "finish_reason": a[GEN_AI.GEN_AI_RESPONSE_FINISH_REASONS][0]}],
                                outputs)


def test_one_trace_per_conversation_with_the_recorded_times_and_the_findings_as_events(tmp_path):
    trace = load_any(ORPHAN)
    spans = _spans(_export(ORPHAN, tmp_path))
    assert len({s["traceId"] for s in spans}) == 1 and len(spans[0]["traceId"]) == 32
    roots = [s for s in spans if not s.get("parentSpanId")]
    assert len(roots) == 1
    calls = sorted((s for s in spans if s.get("parentSpanId")), key=lambda s: _attrs(s)["chain_studio.call"])
    assert {s["parentSpanId"] for s in calls} == {roots[0]["spanId"]}
    for span, call in zip(calls, trace.calls):
        start = datetime.fromisoformat(call.started_at.replace("Z", "+00:00"))
        assert int(span["startTimeUnixNano"]) == int(start.timestamp() * 1000) * 1_000_000
        assert int(span["endTimeUnixNano"]) - int(span["startTimeUnixNano"]) == int(call.latency_ms * 1_000_000)
    failed = [s for s in calls if s.get("status", {}).get("code") == 2]            # STATUS_CODE_ERROR
    assert [_attrs(s)["chain_studio.call"] for s in failed] == [c.index for c in trace.calls if c.failed]
    from agent_core.lint.scan import lint_trace

    expected = {(f.call, f.rule, f.path) for f in lint_trace(trace)}
    got = {(_attrs(s)["chain_studio.call"], _attrs(e)["chain_studio.lint.rule"], _attrs(e)["chain_studio.lint.path"])
           for s in calls for e in s.get("events", []) if e["name"] == "chain_studio.lint.finding"}
    assert got == expected and ("orphan-tool" in {r for _, r, _ in got})


def test_the_file_opens_again_with_the_same_messages(tmp_path):
    trace = load_any(ORPHAN)
    _export(ORPHAN, tmp_path)
    again = load_any(tmp_path / "spans.json")
    assert [c.messages for c in again.calls] == [c.messages for c in trace.calls]


def test_no_key_is_exported(tmp_path):
    key = "sk-proj-" + "Q" * 40
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": f"my key is {key}, keep it"}]}
    path = tmp_path / "log.jsonl"
    path.write_text(json.dumps({"request": body, "response": None}) + "\n", encoding="utf-8")
    text = json.dumps(_export(path, tmp_path))
    assert key not in text and "[REDACTED]" in text


def test_instructions_sent_beside_the_history_are_system_instructions():
    from agent_core.export.genai import system_instructions

    parts = system_instructions({"model": "m", "instructions": "Answer in French.", "input": "hi"})
    jsonschema.validate(parts, _schema("system-instructions"))
    assert parts == [{"type": "text", "content": "Answer in French."}]
    assert system_instructions({"model": "m", "messages": [{"role": "system", "content": "x"}]}) is None


class _Receiver(BaseHTTPRequestHandler):
    bodies: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        self.bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def test_chat_exports_each_call_live_and_never_the_key(demo_server, tmp_path):
    """The live exporter as ``chat --otlp-endpoint`` wires it, received and decoded by the real OTLP protobuf."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from agent_core.chat.session import ChatSession
    from agent_core.export.otlp_live import LiveExporter

    _Receiver.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    key = "sk-live-" + "k" * 32
    try:
        live = LiveExporter(f"http://127.0.0.1:{server.server_address[1]}", secrets=[key])
        session = ChatSession.start(trace_path=tmp_path / "chat.jsonl", base_url=demo_server.base_url, api_key=key,
                                    recorders=(live,))
        session.handle("帮我查一下成都天气")
        session.handle("谢谢")
        session.close()
        summary = live.close()
    finally:
        server.shutdown()
    trace = load_any(tmp_path / "chat.jsonl")
    spans = []
    for raw in _Receiver.bodies:
        assert key.encode() not in raw
        request = ExportTraceServiceRequest.FromString(raw)
        spans += [s for r in request.resource_spans for sc in r.scope_spans for s in sc.spans]
    calls = [s for s in spans if s.parent_span_id]
    assert len(calls) == len(trace.calls) >= 3 and f"sent {len(spans)} spans" in summary
    assert len({s.trace_id for s in spans}) == 1
    for span, call in zip(sorted(calls, key=lambda s: s.start_time_unix_nano), trace.calls):
        a = {kv.key: kv.value.string_value for kv in span.attributes}
        # the exact bytes the SDK sent: their SHA-256 was recorded by the client's transport
        assert hashlib.sha256(a["input.value"].encode("utf-8")).hexdigest() == call.request_sha256
        assert [m["role"] for m in json.loads(a["gen_ai.input.messages"])] == [m["role"] for m in call.messages]


def test_export_to_a_dead_endpoint_is_one_line_and_exit_2(tmp_path, monkeypatch):
    import socket

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2")         # the SDK's own retry deadline
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.run([sys.executable, "-m", "agent_core.cli", "export", str(ORPHAN), "--as", "otlp",
                           "--otlp-endpoint", f"http://127.0.0.1:{port}"], check=False, capture_output=True, text=True,
                          timeout=120, cwd=PROJECT_ROOT)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "did not accept the spans (0 of 8 were sent" in proc.stderr
    bad = subprocess.run([sys.executable, "-m", "agent_core.cli", "export", str(ORPHAN), "--as", "otlp",
                          "--otlp-endpoint", "ftp://x"], check=False, capture_output=True, text=True, timeout=60, cwd=PROJECT_ROOT)
    assert bad.returncode == 2 and "must be an http(s) URL" in bad.stderr


def test_open_refuses_a_url_that_is_no_phoenix_project(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "agent_core.cli", "open", "http://127.0.0.1:9/traces/x",
                           "--out", str(tmp_path / "t.jsonl")], check=False, capture_output=True, text=True, timeout=60,
                          cwd=PROJECT_ROOT)
    assert proc.returncode == 2 and "is not a Phoenix project URL" in proc.stderr


def test_proxy_exports_one_trace_per_conversation_and_never_the_key(demo_server, tmp_path):
    """``proxy --otlp-endpoint``: two tagged conversations through the real openai SDK -> two traces of spans."""
    import openai
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from agent_core.export.otlp_live import LiveExporter
    from agent_core.serve.proxy import SESSION_HEADER, RecordingProxy

    _Receiver.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    key = "sk-proj-" + "p" * 36
    live = LiveExporter(f"http://127.0.0.1:{server.server_address[1]}", name="proxy")
    try:
        with RecordingProxy(demo_server.base_url, port=0, trace_dir=tmp_path / "proxy", observers=(live,)) as proxy:
            for session in ("alice", "bob"):
                client = openai.OpenAI(base_url=proxy.base_url, api_key=key,
                                       default_headers={SESSION_HEADER: session})
                messages = [{"role": "user", "content": f"我叫{session}"}]
                for follow_up in ("我叫什么名字？", "谢谢"):
                    reply = client.chat.completions.create(model="chain-studio-demo-model", messages=messages)
                    messages += [{"role": "assistant", "content": reply.choices[0].message.content},
                                 {"role": "user", "content": follow_up}]
        summary = live.close()
    finally:
        server.shutdown()
    spans = []
    for raw in _Receiver.bodies:
        assert key.encode() not in raw and b"Bearer" not in raw
        request = ExportTraceServiceRequest.FromString(raw)
        spans += [s for r in request.resource_spans for sc in r.scope_spans for s in sc.spans]
    roots = {s.span_id: s for s in spans if not s.parent_span_id}
    assert sorted(r.name for r in roots.values()) == ["conversation proxy alice", "conversation proxy bob"]
    calls = [s for s in spans if s.parent_span_id]
    assert len(calls) == 4 and "sent 6 spans" in summary
    for root in roots.values():
        mine = sorted((s for s in calls if s.parent_span_id == root.span_id), key=lambda s: s.start_time_unix_nano)
        assert len(mine) == 2 and {s.trace_id for s in mine} == {root.trace_id}
        sent = [json.loads({kv.key: kv.value.string_value for kv in s.attributes}["input.value"]) for s in mine]
        assert [len(b["messages"]) for b in sent] == [1, 3]
        assert sent[0]["messages"][0]["content"] == "我叫" + root.name.split()[-1]


def test_a_dataset_of_conversations_gives_one_trace_each(tmp_path):
    path = PROJECT_ROOT / "tests" / "fixtures" / "real_traces" / "tau-bench-gpt-4o-airline" / "gpt-4o-airline.sample.json"
    trace = load_any(path)
    conversations = trace.meta.get("conversations") or [{"calls": [0, len(trace.calls)]}]
    spans = _spans(_export(path, tmp_path))
    roots = [s for s in spans if not s.get("parentSpanId")]
    assert len(roots) == len(conversations) == len({s["traceId"] for s in spans}) > 1
    per_trace = sorted(sum(1 for s in spans if s["traceId"] == r["traceId"] and s.get("parentSpanId")) for r in roots)
    assert per_trace == sorted(c["calls"][1] - c["calls"][0] for c in conversations)


def test_a_hostile_payload_still_gives_schema_valid_messages():
    """A backend drops a whole message list that breaks the schema: untrusted shapes must not break it."""
    from agent_core.export.genai import call_attributes

    messages = [{"role": None, "content": None}, {"role": "tool", "content": None}, "not a message",
                {"role": "assistant", "tool_calls": [{"id": 5, "function": {"name": 7}}, "junk", {"id": "x"}]},
                {"role": ["a"], "content": [{"type": "image_url", "image_url": {"url": "data:,x"}}, 5]},
                {"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}}]
    a = call_attributes({"model": 3, "messages": messages, "tools": [5, {"type": "function", "function": {}}]},
                        {"choices": [{"message": None, "finish_reason": 5}, "x"]}, status=None, error="boom",
                        url=None, request_sha256=None, scrub=lambda s: s)
    jsonschema.validate(json.loads(a["gen_ai.input.messages"]), _schema("input-messages"))
    jsonschema.validate(json.loads(a["gen_ai.tool.definitions"]), _schema("tool-definitions"))
    jsonschema.validate(json.loads(a["gen_ai.output.messages"]), _schema("output-messages"))
    assert len(json.loads(a["gen_ai.input.messages"])) == len(messages)
    assert a["error.type"] == "no_response" and GEN_AI.GEN_AI_REQUEST_MODEL not in a
