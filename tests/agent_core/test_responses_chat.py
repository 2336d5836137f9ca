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


def _chat_over_responses(demo_server, path, server_state: bool) -> tuple[list[str], object]:
    from agent_core.trim.window import MaxMessages

    writer = TraceWriter(path)
    client = LLMClient(Endpoint(base_url=demo_server.base_url, model="gpt-4.1"), recorder=writer, max_retries=0)
    memory = ShortTermMemory(policy=MaxMessages(2), recorder=writer, system_prompt="You are brief.")
    agent = Agent(client, memory, api="responses", server_state=server_state)
    replies = [agent.chat(t) for t in ("Hi, my name is Ada.", "What is the weather in Chengdu?", "What is my name?")]
    client.close()
    writer.close()
    return replies, read_trace(path)


def test_server_state_sends_only_new_items_and_the_server_remembers_past_the_trim(demo_server, tmp_path):
    # OpenAI's Responses API: previous_response_id continues the stored conversation of that response, so a
    # request holds only the new input items; the server, not the app's memory, decides what the model sees.
    replies, trace = _chat_over_responses(demo_server, tmp_path / "s.jsonl", server_state=True)
    assert replies[-1] == "Your name is Ada."       # a 2-message memory trim, yet the server kept the name
    first, *rest = [c.request for c in trace.calls]
    assert "previous_response_id" not in first and [i["role"] for i in first["input"]] == ["system", "user"]
    for previous, call in zip(trace.calls, trace.calls[1:]):
        assert call.request["previous_response_id"] == previous.response["id"]
    # the tool result goes out alone, answering the function_call of the response it chains on
    asked = [o for o in trace.calls[1].response["output"] if o["type"] == "function_call"]
    assert [(i["type"], i["call_id"]) for i in trace.calls[2].request["input"]] == \
        [("function_call_output", asked[0]["call_id"])]
    assert [i["content"] for i in trace.calls[3].request["input"]] == ["What is my name?"]
    # what the studio reconstructs for each call is what the server itself resolved and used
    for replayed, c in zip(replay_responses(trace, KeepAll()), trace.calls):
        assert replayed.native_items() == demo_server.responses.used[c.response["id"]]["input"]
    assert lint_trace(trace) == []


def test_without_server_state_the_same_trim_makes_the_model_forget(demo_server, tmp_path):
    replies, trace = _chat_over_responses(demo_server, tmp_path / "c.jsonl", server_state=False)
    assert replies[-1] == "You have not told me your name."
    assert not any("previous_response_id" in c.request for c in trace.calls)


def test_chat_cli_server_state_needs_the_responses_api(capsys):
    assert main(["chat", "--server-state"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "chain-studio: --server-state needs --api responses: only the Responses API keeps a conversation on the "
        "server (previous_response_id)"]
