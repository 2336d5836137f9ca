"""Long synthetic traces for replay benchmarks and tests: deterministic, no HTTP.

Shaped like a recorded agent session under keep-all (an untrimmed request
log): per turn a user message, often a tool round (one or two parallel
calls), and a final answer; one call after the user message and one after
the tool results. An early fact (``A-2024-0715``) sits in the first turn.
"""
from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone

from agent_core.core.msg import Msg

from .model import Call, Trace

_TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name."}},
                   "required": ["city"]}}}]
_CITIES = ["成都", "北京", "上海", "Paris", "London", "Tokyo", "Berlin"]


def synthetic_trace(calls: int = 1000, seed: int = 7, model: str = "gpt-4o") -> Trace:
    """A trace with exactly ``calls`` chat calls (stream about 2 messages per call)."""
    rng = random.Random(seed)
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    stream: list[Msg] = []
    bodies: list[dict] = []     # one dict per message, shared by every request (as a parsed trace shares them)
    out: list[Call] = []
    n = 0

    def add(data: dict) -> None:
        nonlocal n
        n += 1
        msg = Msg.from_openai(data, id=f"msg_{n:06d}", timestamp=t0 + timedelta(seconds=n))
        stream.append(msg)
        bodies.append(msg.to_openai())

    def call(with_tools: bool) -> None:
        request = {"model": model, "messages": list(bodies)}
        if with_tools:
            request["tools"] = _TOOLS
        out.append(Call(index=len(out), request=request, status=200, stream_index=len(stream),
                        message_ids=[m.id for m in stream]))

    add({"role": "system", "content": "You are a helpful assistant. 你是一个乐于助人的助手。"})
    turn = 0
    while len(out) < calls:
        turn += 1
        text = ("我叫小明，我的工号是 A-2024-0715，请记住。" if turn == 1 else
                f"第 {turn} 轮：" + " ".join(rng.choice(["请", "帮我", "看看", "天气", "今天", "明天", "计划", "the",
                                                       "weather", "plan", "please", "check"])
                                          for _ in range(rng.randint(3, 30))))
        add({"role": "user", "content": text})
        if len(out) + 2 <= calls and rng.random() < 0.6:
            call(True)
            k = 1 if rng.random() < 0.8 else 2
            ids = [f"call_{turn:05d}_{j}" for j in range(k)]
            add({"role": "assistant", "content": None, "tool_calls": [
                {"id": cid, "type": "function",
                 "function": {"name": "get_weather", "arguments": json.dumps({"city": rng.choice(_CITIES)},
                                                                             ensure_ascii=False)}}
                for cid in ids]})
            for cid in ids:
                add({"role": "tool", "tool_call_id": cid, "content": json.dumps(
                    {"condition": rng.choice(["晴", "多云", "rain"]), "temperature_c": rng.randint(-5, 35),
                     "hourly": [rng.randint(0, 30) for _ in range(rng.randint(0, 40))]})})
            call(False)
        else:
            call(True)
        add({"role": "assistant", "content": f"好的，第 {turn} 轮的回答。" + "内容" * rng.randint(1, 40)})
    return Trace(source=f"<synthetic {calls} calls>", format="synthetic", calls=out, stream=stream,
                 meta={"model": model})
