"""The faults issue 17 found: a cut stream, a timeout with nothing shown, 401/429 without advice, each through
the agent directly and through the recording proxy, over real HTTP to the demo model."""
from __future__ import annotations

import pytest

from agent_core.chat.agent import Agent
from agent_core.chat.client import Endpoint, LLMClient
from agent_core.chat.memory import ShortTermMemory
from agent_core.core.errors import EndpointError
from agent_core.serve.proxy import RecordingProxy
from agent_core.trace.reader import read_trace
from agent_core.trace.writer import TraceWriter

CASES = [
    # fault, words in the one line
    ("cut-stream", "the stream was cut"),
    ("cut-stream-once", "the stream was cut"),
    ("401", "(check OPENAI_API_KEY or --api-key)"),
    ("429", "(retry after 1 s)"),
    ("timeout", "did not answer in "),
    ("malformed", "not valid JSON"),
    ("400", "HTTP 400: Invalid parameter"),
    ("500", "HTTP 500: The server had an error"),
]


def _agent(base_url, path, fault, timeout):
    writer = TraceWriter(path)
    client = LLMClient(Endpoint(base_url=base_url, model="demo"), recorder=writer, max_retries=0, timeout=timeout)
    client.extra_headers["X-Demo-Fault"] = fault
    return Agent(client, ShortTermMemory(recorder=writer, system_prompt="sys")), writer


@pytest.mark.parametrize("via_proxy", [False, True], ids=["direct", "proxy"])
@pytest.mark.parametrize("fault, words", CASES, ids=[c[0] for c in CASES])
def test_each_fault_is_one_line_recorded_and_survived(demo_server, tmp_path, fault, words, via_proxy):
    demo_server.timeout_seconds = 1.5
    timeout = 0.5 if fault == "timeout" else 10.0
    proxy = RecordingProxy(demo_server.base_url, port=0, trace_dir=tmp_path / "proxy") if via_proxy else None
    try:
        if proxy is not None:
            proxy.start()
        agent, writer = _agent(proxy.base_url if proxy else demo_server.base_url, tmp_path / "t.jsonl", fault,
                               timeout)
        with pytest.raises(EndpointError) as err:
            agent.chat("你好")
        line = str(err.value)
        assert words in line and "\n" not in line, line
        if fault == "timeout":
            assert " s (1 attempt of 0.5 s)" in line, line
        agent.client.extra_headers.clear()
        assert "小明" in agent.chat("我叫小明")             # the session goes on
        writer.close()
        failed, ok = read_trace(tmp_path / "t.jsonl").calls
        assert failed.failed and failed.request["messages"][-1]["content"] == "你好" and not ok.failed
    finally:
        if proxy is not None:
            proxy.stop()
    if proxy is not None and fault != "timeout":     # the proxy recorded the failed exchange too
        traces = [read_trace(p) for p in sorted(proxy.trace_dir.glob("*.jsonl")) if p.name != "index.jsonl"]
        calls = [c for t in traces for c in t.calls]
        assert len(calls) == 2, [len(t.calls) for t in traces]
        statuses = sorted(str(c.status) for c in calls)
        assert statuses.count("200") >= 1


def test_connection_refused_is_one_line_with_a_hint(tmp_path):
    agent, writer = _agent("http://127.0.0.1:9/v1", tmp_path / "t.jsonl", "", 2.0)
    agent.client.extra_headers.clear()
    with pytest.raises(EndpointError) as err:
        agent.chat("hi")
    writer.close()
    assert str(err.value).startswith("could not connect to 127.0.0.1:9: ") and "is it running?" in str(err.value)
