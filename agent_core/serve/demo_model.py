"""The demo model's brain: deterministic, rule-based answers from the payload alone.

It is stateless like a real model: whatever it "remembers" must be in the
request's ``messages``. Asked 我刚才说我叫什么名字？ it names the user only
when a message in the payload says so. It calls get_weather / get_time /
calculate when tools are offered and the last user message asks for that.
The HTTP server around it is ``demo_server``.
"""
from __future__ import annotations

import hashlib
import json
import re
import time
from typing import Any

from agent_core.core.msg import content_text
from agent_core.trace.tokens import counter_for

MODEL_NAME = "chain-studio-demo-model"

_CITIES = ["成都", "北京", "上海", "深圳", "杭州", "Paris", "London", "New York", "Tokyo", "Berlin",
           "Chengdu", "Beijing", "Shanghai", "Shenzhen", "Hangzhou"]
_NAME_PATTERNS = [r"我叫([\u4e00-\u9fffA-Za-z]{1,8}?)(?:[，,。！!\s]|$)", r"我的名字是([\u4e00-\u9fffA-Za-z]{1,8}?)(?:[，,。！!\s]|$)",
                  r"\bmy name is ([A-Z][a-zA-Z\-]+)", r"\bI am ([A-Z][a-zA-Z\-]+)\b", r"\bI'm ([A-Z][a-zA-Z\-]+)\b"]
_NAME_QUESTIONS = ["我叫什么", "我的名字", "what's my name", "what is my name", "who am i", "remember my name"]


def _is_chinese(text: str) -> bool:
    return bool(re.search(r"[\u4e00-\u9fff]", text))


def _call_id(seed: str) -> str:
    return "call_" + hashlib.sha1(seed.encode("utf-8")).hexdigest()[:24]


def _user_texts(messages: list[dict]) -> list[str]:
    return [content_text(m.get("content")) for m in messages if isinstance(m, dict) and m.get("role") == "user"]


def _find_name(messages: list[dict]) -> str | None:
    for text in reversed(_user_texts(messages)):
        for pattern in _NAME_PATTERNS:
            m = re.search(pattern, text)
            if m and not any(q in text for q in ("什么", "?", "？")):
                return m.group(1)
    return None


def _recall(question: str, messages: list[dict]) -> str | None:
    """Answer "我的X是什么？" / "what is my X?" from an earlier user statement in the payload."""
    m = re.search(r"我的(.{1,10}?)是(?:什么|多少|啥)", question) or re.search(r"what(?:'s| is| was) my ([\w ]{1,30}?)\?", question, re.I)
    if not m:
        return None
    topic = m.group(1).strip()
    for text in reversed(_user_texts(messages)[:-1]):
        found = (re.search(re.escape(topic) + r"\s*(?:是|为|:|：)\s*([^\s，,。！!？?]+)", text)
                 or re.search(r"my " + re.escape(topic) + r" is ([^\s,.!?]+)", text, re.I))
        if found:
            return f"{topic}: {found.group(1)}" if not _is_chinese(question) else f"你的{topic}是 {found.group(1)}。"
    return f"I don't know your {topic}: nothing in this conversation tells me." if not _is_chinese(question) \
        else f"我不知道你的{topic}：对话里没有人告诉过我。"


def _tool_request(text: str, tool_names: set[str]) -> tuple[str, dict] | None:
    lower = text.lower()
    if "get_weather" in tool_names and ("天气" in text or "weather" in lower):
        city = next((c for c in _CITIES if c.lower() in lower), None)
        if city is None:
            m = re.search(r"(?:查一下|查查|查询)?([\u4e00-\u9fff]{2,4}?)(?:的)?天气", text)
            city = m.group(1) if m else "北京"
        return "get_weather", {"city": city}
    if "get_time" in tool_names and any(k in lower for k in ("几点", "时间", "what time", "current time")):
        zone = next((z for z in ("北京", "东京", "伦敦", "纽约", "Tokyo", "London", "Paris", "New York", "UTC")
                     if z.lower() in lower), "Asia/Shanghai")
        return "get_time", {"timezone": zone}
    if "calculate" in tool_names:
        expr = re.search(r"[\d.]+(?:\s*[-+*/×÷%]\s*[\d.()（）]+)+", text)
        if expr and any(k in lower for k in ("算", "calculate", "compute", "等于", "多少", "what is", "=")):
            return "calculate", {"expression": expr.group(0).strip()}
    return None


def _answer_from_tools(results: list[dict], chinese: bool) -> str:
    parts = []
    for r in results:
        try:
            data = json.loads(content_text(r.get("content")))
        except (json.JSONDecodeError, TypeError):
            data = None
        if isinstance(data, dict) and "temperature_c" in data:
            parts.append(f"{data.get('city')}现在{data.get('condition')}，气温 {data.get('temperature_c')}°C，湿度 {data.get('humidity')}%。"
                         if chinese else f"{data.get('city')}: {data.get('condition')}, {data.get('temperature_c')}°C, "
                                         f"humidity {data.get('humidity')}%.")
        elif isinstance(data, dict) and "result" in data:
            parts.append(f"{data.get('expression')} = {data['result']}")
        elif isinstance(data, dict) and "time" in data:
            parts.append(f"{data.get('timezone')} 现在是 {data['time']}。" if chinese
                         else f"It is {data['time']} in {data.get('timezone')}.")
        elif isinstance(data, dict) and "error" in data:
            parts.append(("工具报错：" if chinese else "The tool failed: ") + str(data["error"]))
        else:
            text = content_text(r.get("content"))
            parts.append(("工具返回了 " if chinese else "The tool returned ") + f"{len(text)} " +
                         ("个字符的结果。" if chinese else "characters of data."))
    return " ".join(parts)


def _reply_text(messages: list[dict]) -> str:
    users = _user_texts(messages)
    question = users[-1] if users else ""
    chinese = _is_chinese(question)
    lower = question.lower()
    if any(q in lower for q in _NAME_QUESTIONS):
        name = _find_name(messages)
        if name:
            return f"你叫{name}。" if chinese else f"Your name is {name}."
        return "你还没有告诉我你的名字。" if chinese else "You have not told me your name."
    recalled = _recall(question, messages)
    if recalled:
        return recalled
    name = _find_name(messages[-1:]) if messages and messages[-1].get("role") == "user" else None
    if name:
        return f"你好，{name}！很高兴认识你。" if chinese else f"Nice to meet you, {name}!"
    snippet = question.strip().replace("\n", " ")[:60]
    return f"收到：{snippet}" if chinese else f"Noted: {snippet}"


def respond(body: dict) -> dict:
    """The completion body the demo model returns for a valid request body."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    tools = body.get("tools") if isinstance(body.get("tools"), list) else None
    tool_names = {(t.get("function") or {}).get("name") for t in tools or [] if isinstance(t, dict)}
    last = messages[-1] if messages else {}
    message: dict[str, Any]
    finish = "stop"
    if last.get("role") == "tool":
        results = []
        for m in reversed(messages):
            if m.get("role") != "tool":
                break
            results.insert(0, m)
        users = _user_texts(messages)
        message = {"role": "assistant", "content": _answer_from_tools(results, _is_chinese(users[-1] if users else ""))}
    else:
        request = _tool_request(content_text(last.get("content")), tool_names) if last.get("role") == "user" else None
        if request:
            name, args = request
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": _call_id(f"{len(messages)}:{name}:{json.dumps(args, ensure_ascii=False)}"),
                "type": "function", "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": _reply_text(messages)}
    counter = counter_for(None)
    prompt_tokens = counter.count_payload(messages, tools)
    completion_tokens = counter.count_message(message) - 3
    return {
        "id": "chatcmpl-demo-" + hashlib.sha1(json.dumps(messages, ensure_ascii=False).encode()).hexdigest()[:20],
        "object": "chat.completion", "created": int(time.time()), "model": MODEL_NAME,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def stream_chunks(completion: dict, include_usage: bool = False) -> list[dict]:
    """The same completion as ``chat.completion.chunk`` objects, as a real server streams it."""
    base = {"id": completion["id"], "object": "chat.completion.chunk", "created": completion["created"],
            "model": completion["model"]}
    choice = completion["choices"][0]
    message = choice["message"]
    chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}]
    content = message.get("content") or ""
    for i in range(0, len(content), 8):
        chunks.append({**base, "choices": [{"index": 0, "delta": {"content": content[i:i + 8]}, "finish_reason": None}]})
    for index, call in enumerate(message.get("tool_calls") or []):
        chunks.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": index, "id": call["id"], "type": "function",
             "function": {"name": call["function"]["name"], "arguments": ""}}]}, "finish_reason": None}]})
        chunks.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": index, "function": {"arguments": call["function"]["arguments"]}}]}, "finish_reason": None}]})
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]})
    if include_usage:
        chunks.append({**base, "choices": [], "usage": completion["usage"]})
    return chunks
