"""Deterministic synthetic traces for the benchmarks: one full-history conversation.

N calls with tool rounds, Chinese and English content, realistic message
sizes (user turns of a few sentences, replies of a paragraph or more, tool
results of a few KB) and a few 50 KB tool results. Written with the real
TraceWriter; reported usage is the real token count of each payload.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

from agent_core.chat.tools import default_tools
from agent_core.core.msg import Msg
from agent_core.core.parents import LineageTracker
from agent_core.trace.events import CallAttempt
from agent_core.trace.tokens import counter_for
from agent_core.trace.writer import TraceWriter

MODEL = "gpt-4o-mini"
_ZH = ["我们需要确认订单的配送时间", "请帮我整理一下上周的销售数据", "客户反馈说包装有破损", "下一步的计划是什么",
       "把这份报告翻译成英文", "会议改到周四下午三点", "预算需要再压缩百分之十", "这个接口的延迟太高了"]
_EN = ["Can you summarise the incident timeline", "The deployment failed on the staging cluster",
       "Please draft a reply to the customer", "What changed between version 2.3 and 2.4",
       "Check whether the invoice totals match", "List the open risks for the launch"]


def _sentence(rng: random.Random, n: int) -> str:
    parts = []
    for _ in range(n):
        if rng.random() < 0.5:
            parts.append(rng.choice(_ZH) + f"，编号 {rng.randint(1000, 9999)}。")
        else:
            parts.append(rng.choice(_EN) + f" (ticket #{rng.randint(100, 999)}).")
    return " ".join(parts)


def _tool_result(rng: random.Random, big: bool) -> str:
    rows = 260 if big else rng.randint(8, 30)
    data = {"status": "ok", "rows": [{"id": f"R-{rng.randint(10000, 99999)}", "city": rng.choice(["成都", "Paris", "北京"]),
                                      "value": round(rng.random() * 1000, 2), "note": rng.choice(_ZH + _EN)}
                                     for _ in range(rows)]}
    return json.dumps(data, ensure_ascii=False)


def generate(path: Path, n_calls: int, seed: int = 7) -> Path:
    """Write a trace of exactly ``n_calls`` calls to ``path``."""
    rng = random.Random(seed)
    path.unlink(missing_ok=True)
    writer = TraceWriter(path, meta={"title": f"synthetic-{n_calls}", "model": MODEL, "synthetic": True})
    counter = counter_for(MODEL)
    tools = default_tools().schemas()
    tools_tokens = counter.count_tools(tools)
    lineage = LineageTracker()
    history: list[dict] = []
    tokens = 0
    big_every = max(n_calls // 4, 1)
    call = 0

    def add(msg: Msg) -> None:
        nonlocal tokens
        msg = lineage.link(msg)
        writer.message_added(msg)
        body = msg.to_openai()
        history.append(body)
        tokens += counter.count_message(body)

    def make_call(reply: dict) -> None:
        nonlocal call
        prompt = tokens + tools_tokens + 3
        body = {"model": MODEL, "messages": list(history), "temperature": 0, "tools": tools}
        response = {"id": f"chatcmpl-{call:08d}", "object": "chat.completion", "created": 1764000000 + call,
                    "model": MODEL, "choices": [{"index": 0, "message": reply,
                                                 "finish_reason": "tool_calls" if reply.get("tool_calls") else "stop"}],
                    "usage": {"prompt_tokens": prompt, "completion_tokens": 50, "total_tokens": prompt + 50}}
        writer.call_attempt(CallAttempt(call=call, attempt=1, method="POST", url="https://api.example.com/v1/chat/completions",
                                        request_body=body, status=200, response_body=response,
                                        latency_ms=round(200 + rng.random() * 800, 1),
                                        started_at=f"2026-11-30T10:{(call // 60) % 60:02d}:{call % 60:02d}.000Z"))
        call += 1

    add(Msg(role="system", content="You are a careful operations assistant. 你是一个细心的运营助手。" * 3))
    while call < n_calls:
        add(Msg(role="user", content=_sentence(rng, rng.randint(2, 5))))
        if call + 2 <= n_calls and rng.random() < 0.4:
            call_id = f"call_{rng.getrandbits(96):024x}"
            request = {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function",
                       "function": {"name": "get_weather", "arguments": json.dumps({"city": "成都"}, ensure_ascii=False)}}]}
            make_call(request)
            add(Msg.from_openai({"role": "assistant", "content": "", "tool_calls": request["tool_calls"]}))
            add(Msg(role="tool", content=_tool_result(rng, big=call % big_every == 1), tool_call_id=call_id))
        reply = {"role": "assistant", "content": _sentence(rng, rng.randint(4, 12))}
        make_call(reply)
        add(Msg.from_openai(reply))
    writer.close()
    return path
