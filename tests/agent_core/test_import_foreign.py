"""OTel GenAI spans and AgentScope memory dumps, written by the real SDKs, open as traces."""
from __future__ import annotations

import json

import pytest

from agent_core.ingest.detect import parse_any
from agent_core.lint.scan import lint_trace

otel_sdk = pytest.importorskip("opentelemetry.sdk.trace", reason="opentelemetry-sdk is a test dependency")


def _otlp_json(spans_attrs: list[dict]) -> str:
    """Spans made by the real OpenTelemetry SDK, encoded by the real OTLP encoder, as OTLP JSON."""
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
    tracer = provider.get_tracer("chain-studio-test")
    with tracer.start_as_current_span("invoke_agent"):
        for attrs in spans_attrs:
            with tracer.start_as_current_span(f"chat {attrs.get('gen_ai.request.model')}") as span:
                span.set_attributes(attrs)
    return MessageToJson(encode_spans(exporter.get_finished_spans()))


USER = [{"role": "user", "parts": [{"type": "text", "content": "帮我查一下成都天气"}]}]
CALL = {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1", "name": "get_weather",
                                        "arguments": {"city": "成都"}}]}
RESULT = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": {"condition": "多云"}}]}
ANSWER = {"role": "assistant", "parts": [{"type": "text", "content": "成都多云。"}], "finish_reason": "stop"}


def test_current_genai_conventions():
    text = _otlp_json([
        {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
         "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "You are helpful."}]),
         "gen_ai.input.messages": json.dumps(USER, ensure_ascii=False),
         "gen_ai.output.messages": json.dumps([{**CALL, "finish_reason": "tool_call"}], ensure_ascii=False),
         "gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 9},
        {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
         "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "You are helpful."}]),
         "gen_ai.input.messages": json.dumps(USER + [CALL, RESULT], ensure_ascii=False),
         "gen_ai.output.messages": json.dumps([ANSWER], ensure_ascii=False),
         "gen_ai.usage.input_tokens": 61, "gen_ai.usage.output_tokens": 5},
    ])
    trace = parse_any(text, "spans.json")
    assert trace.format == "otel-genai" and len(trace.calls) == 2
    second = trace.calls[1].messages
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool"]
    assert second[2]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": '{"city": "成都"}'}
    assert second[3] == {"role": "tool", "tool_call_id": "call_1", "content": '{"condition": "多云"}'}
    assert trace.calls[1].reply["content"] == "成都多云。"
    assert trace.calls[1].usage == {"prompt_tokens": 61, "completion_tokens": 5}
    assert any("no gen_ai messages" in w for w in trace.warnings)     # the agent span is named, not dropped
    assert not [f for f in lint_trace(trace) if f.severity == "error"]
    assert len(trace.stream) == 5                                       # system, user, call, result, answer


def test_older_flattened_prompt_attributes():
    text = _otlp_json([{
        "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "weather in Paris?",
        "gen_ai.prompt.1.role": "assistant", "gen_ai.prompt.1.tool_calls.0.id": "call_9",
        "gen_ai.prompt.1.tool_calls.0.name": "get_weather", "gen_ai.prompt.1.tool_calls.0.arguments": '{"city":"Paris"}',
        "gen_ai.prompt.2.role": "user", "gen_ai.prompt.2.content": "hurry",
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "Cloudy.",
        "gen_ai.completion.0.finish_reason": "stop", "gen_ai.usage.prompt_tokens": 30,
        "llm.request.functions.0.name": "get_weather",
    }])
    trace = parse_any(text, "old.json")
    messages = trace.calls[0].messages
    assert messages[1]["tool_calls"][0]["id"] == "call_9"
    rules = {f.rule for f in lint_trace(trace)}
    assert "missing-tool-result" in rules          # the flattened log shows the broken chain
    assert trace.calls[0].reply == {"role": "assistant", "content": "Cloudy."}
    assert trace.calls[0].tools[0]["function"]["name"] == "get_weather"


def test_agentscope_memory_written_by_agentscope():
    message = pytest.importorskip("agentscope.message", reason="agentscope is a test dependency")
    memory = [
        message.Msg(name="system", role="system", content=[message.TextBlock(text="You are a weather bot.")]),
        message.Msg(name="user", role="user", content=[message.TextBlock(text="帮我查一下成都天气")]),
        message.Msg(name="Friday", role="assistant", content=[
            message.TextBlock(text="Let me check."),
            message.ToolCallBlock(id="call_7", name="get_weather", input='{"city": "成都"}')]),
        message.Msg(name="Friday", role="assistant", content=[
            message.ToolResultBlock(id="call_7", name="get_weather", output=[message.TextBlock(text="多云 18°C")])]),
        message.Msg(name="Friday", role="assistant", content=[message.TextBlock(text="成都多云，18°C。")]),
    ]
    text = json.dumps([json.loads(m.model_dump_json()) for m in memory], ensure_ascii=False)
    trace = parse_any(text, "memory.json")
    assert trace.format == "agentscope"
    stream = [m.to_openai() for m in trace.stream]
    assert [m["role"] for m in stream] == ["system", "user", "assistant", "tool", "assistant"]
    assert stream[2]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": '{"city": "成都"}'}
    assert stream[3]["tool_call_id"] == "call_7" and stream[3]["content"] == "多云 18°C"
    assert not [f for f in lint_trace(trace) if f.severity == "error"]
    assert len(trace.calls) == 2   # one call per assistant message


# A chat span as instrumentations write it when message content capture is off (their default).
NO_CONTENT = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.response.model": "gpt-4o",
              "gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 9}


def test_spans_without_message_content_are_refused_with_the_reason(tmp_path, capsys):
    from agent_core.cli.main import main
    from agent_core.core.errors import MalformedTraceError

    text = _otlp_json([NO_CONTENT] * 4)
    with pytest.raises(MalformedTraceError) as info:
        parse_any(text, "spans.json")
    assert "4 spans carry no message content: enable content capture in your instrumentation" in str(info.value)
    path = tmp_path / "spans.json"
    path.write_text(text, encoding="utf-8")
    for command in (["lint", str(path)], ["export", str(path), "--as", "payloads"],
                    ["replay", str(path), "--policy", "keep-all"]):
        assert main(command) == 2, command
        out, err = capsys.readouterr()
        assert out == "", command
        assert err.count("\n") == 1 and "4 spans carry no message content" in err, (command, err)


def test_one_span_with_content_imports_and_names_the_others():
    text = _otlp_json([NO_CONTENT, {**NO_CONTENT, "gen_ai.input.messages": json.dumps(USER, ensure_ascii=False)}])
    trace = parse_any(text, "spans.json")
    assert len(trace.calls) == 1
    assert "1 span carries no message content: enable content capture in your instrumentation" in trace.warnings
