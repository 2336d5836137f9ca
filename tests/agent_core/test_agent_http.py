"""The classic Function Calling flow through the real openai SDK against the demo model over HTTP."""
from __future__ import annotations

import json

import pytest

from agent_core.chat.agent import Agent
from agent_core.chat.client import Endpoint, LLMClient
from agent_core.chat.memory import ShortTermMemory
from agent_core.chat.tools import ToolRegistry, calculate, get_time, get_weather
from agent_core.core.errors import EndpointError
from agent_core.trace.recorder import MemoryRecorder

TURNS = ["我叫小明", "帮我查一下成都天气", "我刚才说我叫什么名字？"]


def _agent(server, send_history=True, max_tool_rounds=1, key="sk-test-key-123456", max_retries=0):
    rec = MemoryRecorder()
    client = LLMClient(Endpoint(base_url=server.base_url, model="demo", api_key=key), recorder=rec,
                       max_retries=max_retries)
    memory = ShortTermMemory(recorder=rec, system_prompt="你是一个助手。")
    return Agent(client, memory, send_history=send_history, max_tool_rounds=max_tool_rounds), rec


def test_three_classic_turns_remember_the_name(demo_server):
    agent, rec = _agent(demo_server)
    answers = [agent.chat(t) for t in TURNS]
    assert "小明" in answers[2]
    assert "18" in answers[1] and "成都" in answers[1]
    last_payload = rec.calls[-1].request_body["messages"]
    assert any(m.get("content") == "我叫小明" for m in last_payload)
    # turn 1: one call; turn 2: tool round = two calls; turn 3: one call
    assert len(rec.calls) == 4


def test_without_history_the_model_forgets(demo_server):
    agent, rec = _agent(demo_server, send_history=False)
    answers = [agent.chat(t) for t in TURNS]
    assert "小明" not in answers[2]
    assert "没有告诉" in answers[2]
    assert all(m.get("content") != "我叫小明" for m in rec.calls[-1].request_body["messages"])


def test_tool_round_second_call_omits_tools_and_pairs_results(demo_server):
    agent, rec = _agent(demo_server)
    agent.chat("帮我查一下成都天气")
    first, second = rec.calls
    assert "tools" in first.request_body
    assert "tools" not in second.request_body
    msgs = second.request_body["messages"]
    assert msgs[-2]["role"] == "assistant" and msgs[-2]["content"] == ""
    call_id = msgs[-2]["tool_calls"][0]["id"]
    assert msgs[-1] == {"role": "tool", "content": json.dumps(get_weather.fn("成都"), ensure_ascii=False),
                        "tool_call_id": call_id}


def test_every_recorded_payload_equals_the_body_the_server_received(demo_server):
    agent, rec = _agent(demo_server)
    for t in TURNS + ["算一下 (12+30)*2", "现在北京几点？"]:
        agent.chat(t)
    received = [json.loads(raw) for raw in demo_server.received]
    recorded = [c.request_body for c in rec.calls]
    assert recorded == received
    assert [list(r) for r in recorded] == [list(r) for r in received]   # key order kept


def test_agent_loop_with_more_tool_rounds(demo_server):
    agent, rec = _agent(demo_server, max_tool_rounds=3)
    answer = agent.chat("帮我查一下北京天气")
    assert "北京" in answer
    # with more rounds allowed, the call after the tool results still offers tools
    assert "tools" in rec.calls[1].request_body


def test_retries_show_as_separate_attempts(demo_server):
    agent, rec = _agent(demo_server, max_retries=2)
    agent.client.extra_headers["X-Demo-Fault"] = "500-once"
    agent.chat("你好")
    assert [(c.call, c.attempt, c.status) for c in rec.calls] == [(0, 1, 500), (0, 2, 200)]


def test_endpoint_error_is_one_sentence_and_recorded(demo_server):
    agent, rec = _agent(demo_server)
    agent.client.extra_headers["X-Demo-Fault"] = "401"
    with pytest.raises(EndpointError) as err:
        agent.chat("你好")
    assert "HTTP 401" in str(err.value) and "\n" not in str(err.value)
    assert rec.calls[-1].status == 401 and "Incorrect API key" in rec.calls[-1].error
    assert agent.memory.messages()[-1].content == "你好"    # the session can go on


def test_demo_model_rejects_a_broken_chain_with_openais_error(demo_server):
    client = LLMClient(Endpoint(base_url=demo_server.base_url, model="demo"), max_retries=0)
    with pytest.raises(EndpointError) as err:
        client.complete([{"role": "user", "content": "hi"},
                         {"role": "tool", "content": "x", "tool_call_id": "call_1"}])
    assert "HTTP 400" in str(err.value)
    assert "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'" in str(err.value)


def test_custom_tool_schema_from_type_hints_and_docstring():
    from agent_core.chat.tools import tool

    @tool
    def lookup(order_id: str, limit: int = 3) -> dict:
        """Find an order.

        Args:
            order_id: The order number.
            limit: How many rows.
        """
        return {"order_id": order_id, "limit": limit}

    assert lookup.schema() == {"type": "function", "function": {
        "name": "lookup", "description": "Find an order.",
        "parameters": {"type": "object", "properties": {
            "order_id": {"type": "string", "description": "The order number."},
            "limit": {"type": "integer", "description": "How many rows."}}, "required": ["order_id"]}}}
    assert json.loads(ToolRegistry([lookup]).run("lookup", '{"order_id": "A1"}')) == {"order_id": "A1", "limit": 3}


def test_bundled_tools_are_safe_and_deterministic():
    registry = ToolRegistry([get_weather, calculate, get_time])
    assert json.loads(registry.run("calculate", '{"expression": "(12+30)*2/7"}'))["result"] == 12
    assert "error" in json.loads(registry.run("calculate", '{"expression": "__import__(\'os\')"}'))
    assert "error" in json.loads(registry.run("calculate", '{"expression": "9**9**9"}'))
    assert json.loads(registry.run("get_weather", '{"city": "Chengdu"}'))["city"] == "成都"
    assert json.loads(registry.run("get_time", '{"timezone": "Asia/Tokyo"}'))["timezone"] == "Asia/Tokyo"
    assert "error" in json.loads(registry.run("nope", "{}"))
