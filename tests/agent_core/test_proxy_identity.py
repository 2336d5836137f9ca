"""Conversation identity through the real proxy: the openai SDK -> proxy -> demo model, no session header.

The demo model (the upstream) keeps the raw bytes of every request body it received; each
conversation file's ``export --as payloads`` must give back exactly those bodies, key order at every
depth included, and nothing may be inferred that the app did not do (no drops, no edits).
"""
from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai
import pytest

from agent_core.export.formats import export_file
from agent_core.serve.proxy import RecordingProxy
from agent_core.trace.reader import read_trace

KEY = "sk-proj-identityTestKey0123456789abcdef"
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                            "parameters": {"type": "object",
                                                           "properties": {"city": {"type": "string"}}}}}]


@pytest.fixture
def proxy(demo_server, tmp_path):
    with RecordingProxy(demo_server.base_url, port=0, trace_dir=tmp_path / "proxy") as p:
        yield p


def _client(proxy: RecordingProxy) -> openai.OpenAI:
    return openai.OpenAI(base_url=proxy.base_url, api_key=KEY, max_retries=0)


def _turn(client: openai.OpenAI, history: list, text: str) -> str:
    """One user turn: the user's text, then model calls until the model answers in text."""
    history.append({"role": "user", "content": text})
    for _ in range(4):
        message = client.chat.completions.create(model="demo", messages=history, tools=TOOLS).choices[0].message
        # sent back as the SDK dumps it: the tool calls' keys come as id, function, type
        history.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            history.append({"role": "tool", "tool_call_id": call.id,
                            "content": json.dumps({"city": "Paris", "temperature_c": 18, "ok": True})})
    raise AssertionError("the demo model kept calling tools")


def _ordered(text: str | bytes) -> str:
    """JSON text that differs whenever key order (at any depth), int vs float or any value differs."""
    return json.dumps(json.loads(text), ensure_ascii=False)


def _conversations(directory: Path) -> dict[str, list[str]]:
    """Each conversation file's exported payloads (``export --as payloads``), in call order."""
    out = {}
    for path in sorted(directory.glob("conversation-*.jsonl")):
        text, _ = export_file(path, "payloads")
        out[path.name] = [_ordered(line) for line in text.splitlines()]
    return out


def _assert_nothing_invented(directory: Path) -> None:
    for path in sorted(directory.glob("conversation-*.jsonl")):
        trace = read_trace(path)
        assert not trace.events, (path.name, [e.event.reason for e in trace.events])
        assert not trace.warnings, (path.name, trace.warnings)


def _index(directory: Path) -> list[dict]:
    return [json.loads(line) for line in (directory / "index.jsonl").read_text(encoding="utf-8").splitlines()]


def test_the_same_script_run_ten_times_is_ten_conversations(demo_server, proxy):
    client = _client(proxy)
    answers = []
    for _ in range(10):
        history = [{"role": "system", "content": "You are a helpful assistant."}]
        answers.append([_turn(client, history, t) for t in
                        ["my name is Ada", "What is the weather in Paris?", "what is my name?"]])
    assert answers[0][2] == "Your name is Ada." and all(a == answers[0] for a in answers)
    proxy.stop()
    received = [_ordered(raw) for raw in demo_server.received]
    assert len(received) == 40          # 4 calls a run: the weather turn is a tool call and its answer
    conversations = _conversations(proxy.trace_dir)
    assert list(conversations.values()) == [received[4 * k:4 * k + 4] for k in range(10)]
    _assert_nothing_invented(proxy.trace_dir)
    reasons = [e["reason"] for e in _index(proxy.trace_dir)]
    assert reasons[0] == "new: first request"
    assert reasons[4] == "new: opening matches conversation 1 but lacks its later messages (2 of 8)"
    assert all(r.startswith("extends conversation ") for k, r in enumerate(reasons) if k % 4)


def test_two_users_taking_turns_are_two_conversations(demo_server, proxy):
    client = _client(proxy)
    system = {"role": "system", "content": "You are the front desk of a hotel."}
    alice, bob = [dict(system)], [dict(system)]
    said = []
    for a_text, b_text in [("my name is Alice", "my name is Bob"),
                           ("What is the weather in Paris?", "What is the weather in Paris?"),
                           ("what is my name?", "what is my name?")]:
        said.append((_turn(client, alice, a_text), _turn(client, bob, b_text)))
    assert said[-1] == ("Your name is Alice.", "Your name is Bob.")
    proxy.stop()
    conversations = _conversations(proxy.trace_dir)
    assert len(conversations) == 2
    received = [_ordered(raw) for raw in demo_server.received]
    by_user = {name: [r for r in received if f"my name is {name}" in r] for name in ("Alice", "Bob")}
    assert list(conversations.values()) == [by_user["Alice"], by_user["Bob"]]
    assert len(by_user["Alice"]) == len(by_user["Bob"]) == 4
    _assert_nothing_invented(proxy.trace_dir)
    for name, trace in ((n, read_trace(proxy.trace_dir / n)) for n in conversations):
        user = "Alice" if "001" in name else "Bob"
        assert f"my name is {user}" in trace.stream[1].content and trace.stream[-1].content == f"Your name is {user}."


def test_twenty_concurrent_threads_with_distinct_system_prompts_are_twenty(demo_server, proxy):
    start = threading.Barrier(20, timeout=30)

    def thread(n: int) -> list[str]:
        client = _client(proxy)
        history = [{"role": "system", "content": f"You are assistant number {n}. Answer briefly."}]
        start.wait()
        return [_turn(client, history, t) for t in
                ["my name is Ada", "What is the weather in Paris?", "what is my name?"]]

    with ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(thread, range(20)))
    # identical replies (text and tool-call ids) in every thread: only the system prompts differ
    assert all(a == answers[0] for a in answers)
    proxy.stop()
    received = [_ordered(raw) for raw in demo_server.received]
    assert len(received) == 80
    conversations = _conversations(proxy.trace_dir)
    assert len(conversations) == 20
    expected = sorted([r for r in received if f"assistant number {n}." in r] for n in range(20))
    assert sorted(conversations.values()) == expected and all(len(c) == 4 for c in expected)
    _assert_nothing_invented(proxy.trace_dir)
    index = _index(proxy.trace_dir)
    assert sum(e["reason"].startswith("new: ") for e in index) == 20
    assert not any(e["reason"].startswith("ambiguous") for e in index)
