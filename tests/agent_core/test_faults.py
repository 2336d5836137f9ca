"""Endpoint faults over real HTTP: the agent reports one clear sentence, the trace keeps the failed call,
and the session goes on."""
from __future__ import annotations

import json
import socket

import pytest

from agent_core.chat.agent import Agent
from agent_core.chat.client import Endpoint, LLMClient
from agent_core.chat.memory import ShortTermMemory
from agent_core.core.errors import EndpointError
from agent_core.trace.reader import read_trace
from agent_core.trace.writer import TraceWriter

CASES = [
    # fault, expected words in the error, attempts recorded (max_retries=2), last status
    ("400", "HTTP 400: Invalid parameter", 1, 400),
    ("401", "HTTP 401: Incorrect API key", 1, 401),
    ("429", "HTTP 429: Rate limit reached", 3, 429),
    ("500", "HTTP 500: The server had an error", 3, 500),
    ("timeout", "did not answer in ", 3, None),
    ("malformed", "not valid JSON", 1, 200),
]


def _session(server, path, fault=None, timeout=5.0, base_url=None):
    writer = TraceWriter(path)
    client = LLMClient(Endpoint(base_url=base_url or server.base_url, model="demo"), recorder=writer,
                       max_retries=2, timeout=timeout)
    if fault:
        client.extra_headers["X-Demo-Fault"] = fault
    return Agent(client, ShortTermMemory(recorder=writer, system_prompt="sys")), writer


@pytest.mark.parametrize("fault, words, attempts, status", CASES)
def test_fault_is_reported_recorded_and_survivable(demo_server, tmp_path, fault, words, attempts, status):
    demo_server.timeout_seconds = 1.5
    agent, writer = _session(demo_server, tmp_path / "t.jsonl", fault, timeout=0.5 if fault == "timeout" else 5.0)
    with pytest.raises(EndpointError) as err:
        agent.chat("你好")
    assert words in str(err.value) and "\n" not in str(err.value)
    agent.client.extra_headers.clear()                                        # the endpoint recovers
    assert "小明" in agent.chat("我叫小明")                                    # the session goes on
    writer.close()
    trace = read_trace(tmp_path / "t.jsonl")
    failed, ok = trace.calls
    assert failed.failed and len(failed.attempts) == attempts and failed.status == status
    assert failed.request["messages"][-1] == {"role": "user", "content": "你好"}     # the payload is kept
    assert failed.error
    assert not ok.failed


def test_429_honours_retry_after_and_then_succeeds(demo_server, tmp_path):
    agent, writer = _session(demo_server, tmp_path / "t.jsonl", "429-once")
    agent.chat("你好")
    writer.close()
    call = read_trace(tmp_path / "t.jsonl").calls[0]
    assert [a.status for a in call.attempts] == [429, 200]
    assert call.attempts[1].started_at > call.attempts[0].started_at


def test_refused_connection(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]          # closed again: nothing listens there
    agent, writer = _session(None, tmp_path / "t.jsonl", base_url=f"http://127.0.0.1:{port}/v1")
    with pytest.raises(EndpointError, match="could not connect"):
        agent.chat("你好")
    writer.close()
    call = read_trace(tmp_path / "t.jsonl").calls[0]
    assert call.status is None and "ConnectError" in call.error and len(call.attempts) == 3


def test_stream_cut_midway_is_an_error_and_recorded(demo_server, tmp_path):
    writer = TraceWriter(tmp_path / "t.jsonl")
    client = LLMClient(Endpoint(base_url=demo_server.base_url, model="demo"), recorder=writer, max_retries=0)
    client.extra_headers["X-Demo-Fault"] = "cut-stream"
    with pytest.raises(EndpointError, match="cut the stream"):
        client.complete([{"role": "user", "content": "hello there"}], stream=True)
    writer.close()
    call = read_trace(tmp_path / "t.jsonl").calls[0]
    assert call.stream and call.error == "stream ended before [DONE]"


def test_streamed_reply_is_reassembled_in_the_trace(demo_server, tmp_path):
    writer = TraceWriter(tmp_path / "t.jsonl")
    client = LLMClient(Endpoint(base_url=demo_server.base_url, model="demo"), recorder=writer)
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
              "properties": {"city": {"type": "string"}}}}}]
    reply = client.complete([{"role": "user", "content": "帮我查一下成都天气"}], tools, stream=True,
                            stream_options={"include_usage": True})
    writer.close()
    call = read_trace(tmp_path / "t.jsonl").calls[0]
    assert call.stream and call.error is None
    message = call.reply
    assert message["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": json.dumps({"city": "成都"},
                                                                                                  ensure_ascii=False)}
    assert call.usage["prompt_tokens"] > 0
    assert reply["choices"][0]["message"]["tool_calls"][0]["id"] == message["tool_calls"][0]["id"]
