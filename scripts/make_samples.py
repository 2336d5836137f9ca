"""Regenerate sample_traces/ by running the real agent against the demo model.

    python scripts/make_samples.py

Every sample is a real recording: the openai SDK over HTTP to the bundled
demo model, recorded by the agent core. Run it again after changing the
trace format or the demo model.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent_core.chat.agent import Agent  # noqa: E402
from agent_core.chat.client import Endpoint, LLMClient  # noqa: E402
from agent_core.chat.memory import ShortTermMemory  # noqa: E402
from agent_core.chat.tools import ToolRegistry, calculate, get_time, tool  # noqa: E402
from agent_core.core.errors import EndpointError  # noqa: E402
from agent_core.serve.demo_model import MODEL_NAME  # noqa: E402
from agent_core.serve.demo_server import DemoModelServer  # noqa: E402
from agent_core.serve.proxy import RecordingProxy  # noqa: E402
from agent_core.trace.reader import read_trace  # noqa: E402
from agent_core.trace.writer import TraceWriter, write_trace  # noqa: E402
from agent_core.trim.base import TrimPolicy  # noqa: E402
from agent_core.trim.window import MaxMessages, NaiveDropOldest  # noqa: E402

OUT = ROOT / "sample_traces"
SYSTEM = "你是一个乐于助人的助手。You are a helpful assistant."
CLASSIC = ["我叫小明", "帮我查一下成都天气", "我刚才说我叫什么名字？"]


def record(name: str, description: str, turns: list[str], *, policy: TrimPolicy | None = None,
           tools: ToolRegistry | None = None, send_history: bool = True, server: DemoModelServer) -> Path:
    path = OUT / f"{name}.jsonl"
    path.unlink(missing_ok=True)
    policy = policy or MaxMessages(40)
    writer = TraceWriter(path, meta={"title": name, "description": description, "model": MODEL_NAME,
                                     "policy": policy.name, "policy_params": policy.params(),
                                     "recorded_by": "scripts/make_samples.py"})
    client = LLMClient(Endpoint(base_url=server.base_url, model=MODEL_NAME, is_demo=True), recorder=writer,
                       max_retries=0)
    agent = Agent(client, ShortTermMemory(policy=policy, recorder=writer, system_prompt=SYSTEM),
                  tools=tools, send_history=send_history)
    for turn in turns:
        try:
            agent.chat(turn)
        except EndpointError as err:
            print(f"  {name}: {err}")
    writer.close()
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size} bytes)")
    return path


RESPONSES_TOOLS = [{"type": "function", "name": "get_weather", "description": "Current weather for a city",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]


def record_responses(name: str, description: str, server: DemoModelServer) -> Path:
    """The Responses API through the recording proxy: the openai SDK's ``client.responses.create`` with
    ``previous_response_id``, a tool round and a streamed turn."""
    import tempfile

    import openai

    path = OUT / f"{name}.jsonl"
    path.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        with RecordingProxy(server.base_url, port=0, trace_dir=tmp) as proxy:
            client = openai.OpenAI(base_url=proxy.base_url, api_key="sk-sample", max_retries=0)
            first = client.responses.create(model=MODEL_NAME, input="Hi, my name is Ada.",
                                            instructions="You are a helpful assistant.")
            asked = client.responses.create(model=MODEL_NAME, previous_response_id=first.id,
                                            input="What's the weather in Paris?", tools=RESPONSES_TOOLS)
            call = asked.output[0]
            weather = json.dumps(_get_weather_small(json.loads(call.arguments)["city"]), ensure_ascii=False)
            answered = client.responses.create(model=MODEL_NAME, previous_response_id=asked.id, tools=RESPONSES_TOOLS,
                                               input=[{"type": "function_call_output", "call_id": call.call_id,
                                                       "output": weather}])
            for _ in client.responses.create(model=MODEL_NAME, previous_response_id=answered.id,
                                             input="What is my name?", stream=True):
                pass
            proxy.stop()
            [recorded] = proxy.trace_files()
        trace = read_trace(recorded)
    trace.meta.update({"title": name, "description": description, "model": MODEL_NAME,
                       "recorded_by": "scripts/make_samples.py (openai SDK -> chain-studio proxy -> demo model)"})
    write_trace(trace, path)
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size} bytes)")
    return path


def record_responses_truncated(name: str, description: str, server: DemoModelServer) -> Path:
    """A long previous_response_id chain with ``truncation: "auto"``: the demo model (2,048-token window) drops
    the oldest items silently, and the early fact is gone when asked for."""
    import tempfile

    import openai

    path = OUT / f"{name}.jsonl"
    path.unlink(missing_ok=True)
    notes = ("The quarterly report covers revenue, costs, hiring plans, vendor contracts and the office move. " * 30)
    with tempfile.TemporaryDirectory() as tmp:
        with RecordingProxy(server.base_url, port=0, trace_dir=tmp) as proxy:
            client = openai.OpenAI(base_url=proxy.base_url, api_key="sk-sample", max_retries=0)
            previous = None
            turns = ["Hi, my name is Ada."] + [f"Part {k} of my notes: {notes}" for k in range(1, 9)] + \
                ["What is my name?"]
            for turn in turns:
                previous = client.responses.create(model=MODEL_NAME, input=turn, previous_response_id=previous,
                                                   truncation="auto").id
            proxy.stop()
            [recorded] = proxy.trace_files()
        trace = read_trace(recorded)
    trace.meta.update({"title": name, "description": description, "model": MODEL_NAME,
                       "recorded_by": "scripts/make_samples.py (openai SDK -> chain-studio proxy -> demo model)"})
    write_trace(trace, path)
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size} bytes)")
    return path


def _get_weather_small(city: str) -> dict:
    return {"city": city, "condition": "sunny", "temperature_c": 21, "humidity": 40}


def long_conversation() -> list[str]:
    """60 rounds: an early fact, small talk and tool use, then the fact is asked for."""
    turns = ["我叫小明，我的工号是 A-2024-0715，请记住。"]
    topics = ["帮我查一下北京天气", "算一下 (12+30)*2", "讲讲你今天的计划", "帮我查一下上海天气", "现在东京几点？",
              "推荐一本书", "算一下 365*24", "我喜欢喝绿茶", "帮我查一下深圳天气", "总结一下我们聊了什么"]
    for i in range(1, 59):
        turns.append(topics[i % len(topics)] if i % 3 else f"第 {i} 轮：随便聊聊，今天是第 {i} 天。")
    turns.append("我的工号是什么？")
    return turns


@tool(name="search_orders")
def _search_orders(query: str) -> dict:
    """Search the order database and return every matching order with full details.

    Args:
        query: Free-text search, e.g. a city or a product.
    """
    rows = [{"order_id": f"ORD-{10000 + i}", "city": ["成都", "北京", "上海"][i % 3], "status": "shipped",
             "items": [{"sku": f"SKU-{i}-{j}", "name": f"商品 {j}", "qty": j + 1, "price": 19.9 + j} for j in range(4)],
             "notes": "客户要求下午送达，包装加固。" * 2} for i in range(120)]
    return {"query": query, "count": len(rows), "orders": rows}


@tool(name="get_weather")
def _get_weather_huge(city: str) -> dict:
    """Get the current weather for a city, with the full hourly forecast.

    Args:
        city: City name, in Chinese or English.
    """
    hourly = [{"hour": h, "temperature_c": 12 + (h % 9), "humidity": 60 + h % 30, "wind_kph": 5 + h % 11,
               "condition": ["多云", "晴", "小雨"][h % 3]} for h in range(24 * 14)]
    return {"city": city, "condition": "多云", "temperature_c": 18, "humidity": 72, "hourly_forecast": hourly}


def main() -> None:
    OUT.mkdir(exist_ok=True)
    with DemoModelServer() as server:
        record("classic_remembers", "Three classic turns with full history: the model remembers the name.",
               CLASSIC, server=server)
        record("history_not_passed", "The same turns, but the app sends only the current turn: the model forgets.",
               CLASSIC, send_history=False, server=server)
        record("long_trimmed_fact", "60 rounds under max_messages=40: the early fact 工号 A-2024-0715 is trimmed "
               "away, and asked for at the end.", long_conversation(), server=server)
        record("huge_tool_result", "A weather tool whose hourly-forecast JSON dominates the context.",
               ["帮我查一下成都天气", "那北京呢？帮我查一下北京天气", "谢谢，总结一下"],
               tools=ToolRegistry([_get_weather_huge, calculate, get_time]), server=server)
        record("naive_trim_orphan", "A naive trim (drop exactly one oldest message) cuts a tool call from its "
               "result: the next request has an orphan tool message and the API rejects it.",
               ["我叫小明", "帮我查一下成都天气", "谢谢", "帮我查一下北京天气", "再见"],
               policy=NaiveDropOldest(max_messages=4), server=server)
        record_responses("responses_previous_id", "The Responses API: client.responses.create chained with "
                         "previous_response_id (each request sends only its new items), a function_call round and a "
                         "streamed turn; the model remembers the name through the stored chain.", server=server)
        record_responses_truncated("responses_truncated", "The Responses API with truncation: auto: a long "
                                   "previous_response_id chain outgrows the demo model's 2,048-token window, the "
                                   "server silently drops the oldest items (reported input tokens far below the "
                                   "chain's), and the name told first is forgotten.", server=server)
    (OUT / "README.md").write_text(_readme(), encoding="utf-8")


def _readme() -> str:
    lines = ["# Sample traces", "",
             "Recorded by `python scripts/make_samples.py`: the real agent, the openai SDK over HTTP, and the bundled",
             "demo model. Open one with `chain-studio open sample_traces/<name>.jsonl`.", ""]
    for path in sorted(OUT.glob("*.jsonl")):
        header = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
        lines.append(f"- `{path.name}`: {header['meta'].get('description', '')}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
