"""The agent core's own client over the Responses API (``chain-studio chat --api responses``), recorded."""
from __future__ import annotations

from agent_core.apis.responses import RESPONSES
from agent_core.chat.agent import Agent
from agent_core.chat.client import Endpoint, LLMClient
from agent_core.chat.memory import ShortTermMemory
from agent_core.cli.main import main
from agent_core.lint.scan import lint_trace
from agent_core.replay.responses import replay_responses
from agent_core.trace.reader import read_trace
from agent_core.trace.writer import TraceWriter
from agent_core.trim.window import KeepAll


def test_agent_over_responses_records_what_the_model_used(demo_server, tmp_path):
    path = tmp_path / "r.jsonl"
    writer = TraceWriter(path)
    client = LLMClient(Endpoint(base_url=demo_server.base_url, model="gpt-4.1"), recorder=writer, max_retries=0)
    agent = Agent(client, ShortTermMemory(recorder=writer, system_prompt="You are brief."), api="responses")
    assert agent.chat("我叫小明") == "你好，小明！很高兴认识你。"
    assert agent.chat("帮我查一下成都天气").startswith("成都现在")
    assert agent.chat("我刚才说我叫什么名字？") == "你叫小明。"
    client.close()
    writer.close()
    trace = read_trace(path)
    assert len(trace.calls) == 4 and all(RESPONSES.claims(c.request) for c in trace.calls)
    assert all(c.url.endswith("/v1/responses") for c in trace.calls[0].attempts)
    tools = trace.calls[1].request["tools"]
    assert tools[0]["type"] == "function" and "name" in tools[0] and "function" not in tools[0]   # flat tools
    assert [i.get("type") for i in trace.calls[2].request["input"][-2:]] == ["function_call", "function_call_output"]
    assert lint_trace(trace) == []
    for replayed, c in zip(replay_responses(trace, KeepAll()), trace.calls):
        assert replayed.native_items() == demo_server.responses.used[c.response["id"]]["input"]
    assert [m.role for m in trace.stream][-2:] == ["user", "assistant"]      # memory recorded as usual


def test_chat_cli_takes_api_responses(monkeypatch, tmp_path, capsys):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("Hi, my name is Ada.\nWhat is my name?\n"))
    assert main(["chat", "--api", "responses", "--trace", str(tmp_path / "c.jsonl")]) == 0
    assert capsys.readouterr().out.splitlines() == ["Nice to meet you, Ada!", "Your name is Ada."]
    assert read_trace(tmp_path / "c.jsonl").meta["api"] == "responses"
