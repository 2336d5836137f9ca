"""The real ``anthropic`` SDK -> the recording proxy -> the demo model's /v1/messages, over real HTTP.

Expected values come from the SDK itself (its typed responses, its stream accumulator) and from
Anthropic's documented shapes, not from our own adapter.
"""
from __future__ import annotations

import json

import anthropic
import pytest

from agent_core.apis.anthropic_messages import ANTHROPIC_MESSAGES
from agent_core.apis.base import api_for_body, api_for_path
from agent_core.ingest.detect import load_any
from agent_core.lint.scan import lint_trace
from agent_core.replay.engine import policy_for_trace, replay
from agent_core.serve.proxy import RecordingProxy

KEY = "sk-ant-api03-proxyTestKey0123456789abcdefXYZ"
TOOLS = [{"name": "get_weather", "description": "Weather for a city",
          "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
RESULT = json.dumps({"city": "Paris", "condition": "sunny", "temperature_c": 21, "humidity": 40})
# Documented order of a Messages stream (docs.anthropic.com, "Streaming Messages": event flow).
STREAM_ORDER = ["message_start", "content_block_start", "content_block_delta", "content_block_stop",
                "message_delta", "message_stop"]


def _client(base_url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=base_url.removesuffix("/v1"), api_key=KEY, max_retries=0)


def _tool_round(client: anthropic.Anthropic, stream: bool) -> tuple[list, list]:
    """A weather question, the tool_use, our tool_result, the final answer; returns (messages, responses)."""
    messages: list = [{"role": "user", "content": "What's the weather in Paris?"}]
    responses = []
    for _ in range(2):
        kwargs = {"model": "claude-sonnet-4-5", "max_tokens": 256, "system": "Answer briefly.", "tools": TOOLS,
                      "messages": messages}
        if stream:
            with client.messages.stream(**kwargs) as s:
                kinds = [event.type for event in s]
                reply = s.get_final_message()
            seen = [k for k in kinds if k in STREAM_ORDER]
            assert seen[0] == "message_start" and seen[-2:] == ["message_delta", "message_stop"]
            assert [k for i, k in enumerate(seen) if i == 0 or k != seen[i - 1]][:2] == STREAM_ORDER[:2]
        else:
            reply = client.messages.create(**kwargs)
        responses.append(reply)
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]})
        if reply.stop_reason != "tool_use":
            break
        use = next(b for b in reply.content if b.type == "tool_use")
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id,
                                                      "content": RESULT}]})
    return messages, responses


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_sdk_tool_round_through_the_proxy(demo_server, tmp_path, stream):
    with RecordingProxy(demo_server.base_url, port=0, trace_dir=tmp_path / "proxy") as proxy:
        messages, responses = _tool_round(_client(proxy.base_url), stream)
    first, last = responses
    assert first.stop_reason == "tool_use" and first.content[0].type == "tool_use"
    assert first.content[0].id.startswith("toolu_") and first.content[0].input == {"city": "Paris"}
    assert last.stop_reason == "end_turn" and "Paris" in last.content[0].text and "21" in last.content[0].text
    assert first.usage.input_tokens > 0 and first.usage.output_tokens > 0
    assert proxy.errors == []
    files = proxy.trace_files()
    assert len(files) == 1
    for path in (tmp_path / "proxy").iterdir():
        data = path.read_bytes()
        assert KEY.encode() not in data and b"x-api-key" not in data.lower(), path.name
    trace = load_any(files[0])
    assert len(trace.calls) == 2
    assert [c.attempts[-1].url.endswith("/v1/messages") for c in trace.calls] == [True, True]
    # what the proxy recorded is what the SDK sent and got (the stream reassembled into the SDK's own final message)
    assert trace.calls[1].request["messages"] == messages[:3]
    assert trace.calls[1].request["system"] == "Answer briefly."
    for call, reply in zip(trace.calls, responses):
        assert call.stream is stream
        assert call.response["content"] == [b.model_dump(exclude_none=True) for b in reply.content]
        assert call.response["usage"]["output_tokens"] == reply.usage.output_tokens
    assert lint_trace(trace, profile="anthropic") == []
    result = replay(trace, policy_for_trace("keep-all", None, trace), profile="anthropic")
    for r in result.calls:
        assert r.same and r.messages == trace.calls[r.call].messages and r.findings == []


def test_demo_model_rejects_a_broken_chain_with_anthropics_text(demo_server):
    client = _client(demo_server.base_url)
    reply = client.messages.create(model="m", max_tokens=64, tools=TOOLS,
                                   messages=[{"role": "user", "content": "weather in Paris?"}])
    broken = [{"role": "user", "content": "weather in Paris?"},
              {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]},
              {"role": "user", "content": "never mind"}]
    with pytest.raises(anthropic.BadRequestError) as err:
        client.messages.create(model="m", max_tokens=64, tools=TOOLS, messages=broken)
    body = err.value.body
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    # anthropics/claude-code#5989 (text quoted in ../shared/design/protocol-errors.md, section 5)
    assert body["error"]["message"] == (
        f"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: {reply.content[0].id}. "
        "Each `tool_use` block must have a corresponding `tool_result` block in the next message.")
    with pytest.raises(anthropic.BadRequestError) as err:
        client.messages.create(model="m", max_tokens=64, messages=[
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "text", "text": ""}]},
            {"role": "user", "content": "again"}])
    assert err.value.body["error"]["message"] == "messages: text content blocks must be non-empty"   # claude-code#59812


def test_adapter_claims_and_paths():
    assert api_for_path("http://127.0.0.1:9/v1/messages") is ANTHROPIC_MESSAGES
    assert api_for_path("http://127.0.0.1:9/v1/chat/completions").name == "chat-completions"
    assert api_for_body({"model": "m", "max_tokens": 5, "system": "s", "messages": []}) is ANTHROPIC_MESSAGES
    assert api_for_body({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).name == "chat-completions"
    curl = ANTHROPIC_MESSAGES.curl({"model": "m", "max_tokens": 5, "messages": []})
    assert "https://api.anthropic.com/v1/messages" in curl and '"x-api-key: $ANTHROPIC_API_KEY"' in curl
    assert "anthropic-version: 2023-06-01" in curl
