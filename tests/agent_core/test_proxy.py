"""The recording proxy over real HTTP: the openai SDK -> proxy -> demo model, both on free ports."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import types
from pathlib import Path

import httpx2
import openai
import pytest

from agent_core.chat.agent import Agent
from agent_core.chat.client import Endpoint, LLMClient
from agent_core.chat.memory import ShortTermMemory
from agent_core.core.msg import message_key
from agent_core.serve import demo_model
from agent_core.serve.proxy import (
    SESSION_HEADER,
    ProxyError,
    RecordingProxy,
    upstream_url,
)
from agent_core.trace.reader import read_trace
from agent_core.trim.window import MaxMessages

KEY = "sk-proj-proxyTestKey0123456789abcdefXYZ"
TURNS = ["我叫小明", "帮我查一下成都天气", "算一下 (12+30)*2", "我刚才说我叫什么名字？", "my name is Bob", "what is my name?"]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                            "parameters": {"type": "object",
                                                           "properties": {"city": {"type": "string"}}}}}]


@pytest.fixture(autouse=True)
def _frozen_clock(monkeypatch):
    """The demo model stamps ``created`` with the clock; freeze it so direct and proxied bytes can be compared."""
    monkeypatch.setattr(demo_model, "time", types.SimpleNamespace(time=lambda: 1_767_000_000))


@pytest.fixture
def proxy(demo_server, tmp_path):
    with RecordingProxy(demo_server.base_url, port=0, trace_dir=tmp_path / "proxy") as p:
        yield p


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def _assert_no_secret(directory: Path, *secrets: str) -> None:
    for name, data in _files(directory).items():
        for s in secrets:
            assert s.encode() not in data, f"{s!r} leaked into {name}"
        assert b"Authorization" not in data and b"authorization" not in data, name


def _raw(url, data, headers=None):
    with httpx2.Client(timeout=30) as c:
        r = c.post(url, content=data, headers={"Content-Type": "application/json",
                                                "Authorization": f"Bearer {KEY}", **(headers or {})})
        return r.status_code, r.headers, r.content


@pytest.mark.parametrize("stream", [False, True])
def test_bytes_pass_through_unchanged(demo_server, proxy, stream):
    body = {"model": "demo", "messages": [{"role": "user", "content": "帮我查一下成都天气"}], "tools": TOOLS}
    if stream:
        body.update(stream=True, stream_options={"include_usage": True})
    # odd spacing and key order on purpose: the proxy must not re-serialize
    data = json.dumps(body, ensure_ascii=False, indent=3).encode("utf-8")
    direct = _raw(demo_server.base_url + "/chat/completions", data)
    proxied = _raw(proxy.base_url + "/chat/completions", data)
    assert demo_server.received == [data, data]
    assert proxied[0] == direct[0] == 200
    assert proxied[2] == direct[2]
    assert proxied[1]["content-type"] == direct[1]["content-type"]
    if not stream:
        assert proxied[1]["content-length"] == direct[1]["content-length"]
    else:
        assert proxied[2].endswith(b"data: [DONE]\n\n")
    (call,) = read_trace(proxy.trace_dir / "conversation-001.jsonl").calls
    assert call.request == body and list(call.request) == list(body)
    assert call.status == 200 and call.stream is stream and call.error is None
    assert call.usage == json.loads(direct[2])["usage"] if not stream else call.usage["total_tokens"] > 0
    assert call.reply["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": '{"city": "成都"}'}
    _assert_no_secret(proxy.trace_dir, KEY)


def test_sdk_sees_identical_responses(demo_server, proxy):
    direct = openai.OpenAI(base_url=demo_server.base_url, api_key=KEY, max_retries=0)
    via = openai.OpenAI(base_url=proxy.base_url, api_key=KEY, max_retries=0)
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    a = direct.chat.completions.create(model="demo", messages=messages, tools=TOOLS)
    b = via.chat.completions.create(model="demo", messages=messages, tools=TOOLS)
    assert b.model_dump() == a.model_dump()
    a_chunks = [c.model_dump() for c in direct.chat.completions.create(
        model="demo", messages=[{"role": "user", "content": "my name is Ada"}], stream=True)]
    b_chunks = [c.model_dump() for c in via.chat.completions.create(
        model="demo", messages=[{"role": "user", "content": "my name is Ada"}], stream=True)]
    assert b_chunks == a_chunks and len(a_chunks) > 3
    assert via.models.list().model_dump() == direct.models.list().model_dump()
    traces = {p.name: read_trace(p) for p in proxy.trace_dir.glob("conversation-*.jsonl")}
    assert sorted(traces) == ["conversation-001.jsonl", "conversation-002.jsonl"]
    streamed = traces["conversation-002.jsonl"].calls[0]
    assert streamed.stream and streamed.reply == {"role": "assistant", "content": "Nice to meet you, Ada!"}
    other = read_trace(proxy.trace_dir / "other.jsonl")
    assert [(c.purpose, c.attempts[0].method, c.status) for c in other.calls] == [("other", "GET", 200)]
    index = [json.loads(line) for line in (proxy.trace_dir / "index.jsonl").read_text().splitlines()]
    assert [(e["method"], e["path"], e["file"]) for e in index] == [
        ("POST", "/v1/chat/completions", "conversation-001.jsonl"),
        ("POST", "/v1/chat/completions", "conversation-002.jsonl"),
        ("GET", "/v1/models", "other.jsonl")]
    _assert_no_secret(proxy.trace_dir, KEY)


def _run_agent(base_url, recorder, key, max_messages, headers=None):
    client = LLMClient(Endpoint(base_url=base_url, model="demo", api_key=key), recorder=recorder, max_retries=0)
    if headers:
        client._sdk = client._sdk.with_options(default_headers=headers)
    memory = ShortTermMemory(policy=MaxMessages(max_messages), recorder=recorder, system_prompt="你是一个助手。")
    agent = Agent(client, memory)
    answers = [agent.chat(t) for t in TURNS]
    client.close()
    return answers


@pytest.mark.parametrize("max_messages", [40, 5])
def test_proxy_trace_matches_the_agents_own_recording(demo_server, proxy, tmp_path, max_messages):
    from agent_core.trace.writer import TraceWriter

    with TraceWriter(tmp_path / "direct.jsonl") as w:
        direct_answers = _run_agent(demo_server.base_url, w, "", max_messages)
    proxied_answers = _run_agent(proxy.base_url, TraceWriter(tmp_path / "via.jsonl"), KEY, max_messages)
    assert proxied_answers == direct_answers
    proxy.stop()            # flushes the conversation's last reply into its stream
    direct = read_trace(tmp_path / "direct.jsonl")
    (path,) = proxy.trace_dir.glob("conversation-*.jsonl")
    seen = read_trace(path)
    assert len(seen.calls) == len(direct.calls) == 8
    assert [c.request for c in seen.calls] == [c.request for c in direct.calls]
    assert [c.response for c in seen.calls] == [c.response for c in direct.calls]
    assert [c.status for c in seen.calls] == [200] * 8
    assert all(c.latency_ms > 0 and c.started_at for c in seen.calls)
    # the same message stream, each call made after the same number of adds
    assert [m.to_openai() for m in seen.stream] == [m.to_openai() for m in direct.stream]
    assert [c.stream_index for c in seen.calls] == [c.stream_index for c in direct.calls]
    for trace in (seen, direct):
        table = trace.message_by_id()
        assert [[table[i].to_openai() for i in c.message_ids] for c in trace.calls] == \
            [c.messages for c in trace.calls]

    def removed(trace):
        table = trace.message_by_id()
        last = trace.calls[-1]
        return sorted(message_key(table[i].to_openai()) for e in trace.events for i in e.event.removed
                      if (e.after_add, e.calls_before) < (last.stream_index, last.index + 1))

    # what the trim policy removed before each call is exactly what the proxy inferred as dropped
    # (a trim after the last call shows in no payload, so no proxy can see it)
    assert removed(seen) == removed(direct)
    assert bool(direct.events) is (max_messages == 5)
    _assert_no_secret(proxy.trace_dir, KEY)


def test_sessions_split_by_header_and_by_continuity(demo_server, proxy, tmp_path):
    # the same words in two sessions: only the header can tell them apart
    def chat(session, text, history):
        history.append({"role": "user", "content": text})
        headers = {SESSION_HEADER: session} if session else {}
        status, _, content = _raw(proxy.base_url + "/chat/completions",
                                  json.dumps({"model": "demo", "messages": history}).encode(), headers)
        assert status == 200
        history.append(json.loads(content)["choices"][0]["message"])

    alice, bob = [], []
    for text in ["I'm Alice", "what is my name?"]:
        chat("alice", text, alice)
        chat("bob/2 x", text, bob)
    paris, sql = [], []
    for text in ["Plan a trip to Paris", "Day two?", "Day three?"]:
        chat(None, text, paris)
        chat(None, "SQL: " + text, sql)
    proxy.stop()
    names = sorted(p.name for p in proxy.trace_dir.glob("*.jsonl"))
    assert names[:4] == ["conversation-001.jsonl", "conversation-002.jsonl", "index.jsonl", "session-alice.jsonl"]
    assert len(names) == 5 and names[4].startswith("session-bob-2-")      # unsafe characters replaced, hash added
    by_name = {n: read_trace(proxy.trace_dir / n) for n in names if n != "index.jsonl"}
    assert by_name["session-alice.jsonl"].meta["session"] == "alice"
    for name, trace in by_name.items():
        assert len(trace.calls) == (2 if name.startswith("session-") else 3)
        assert not trace.events, name          # each payload extends the previous one of its conversation
        assert [m.to_openai() for m in trace.stream] == trace.calls[-1].messages + [trace.calls[-1].reply]
    assert by_name["conversation-001.jsonl"].stream[0].content == "Plan a trip to Paris"
    assert by_name["conversation-002.jsonl"].stream[0].content == "SQL: Plan a trip to Paris"
    index = [json.loads(line) for line in (proxy.trace_dir / "index.jsonl").read_text().splitlines()]
    assert [(e["file"], e["reason"]) for e in index[:2] + index[4:7]] == [
        ("session-alice.jsonl", "session header"), (names[4], "session header"),
        ("conversation-001.jsonl", "new: no conversation without a session label yet"),
        ("conversation-002.jsonl", "new: extends no conversation's last payload"),
        ("conversation-001.jsonl", "extends conversation 3's last payload (1 of 1 messages kept, its reply sent back)")]
    assert index[6]["conversation"] == by_name["conversation-001.jsonl"].meta["conversation"] == 3


def test_sdk_retry_is_a_second_attempt_of_the_same_call(demo_server, proxy):
    client = openai.OpenAI(base_url=proxy.base_url, api_key=KEY, max_retries=1,
                           default_headers={"X-Demo-Fault": "500-once"})
    reply = client.chat.completions.create(model="demo", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "Noted: hi"
    (call,) = read_trace(proxy.trace_dir / "conversation-001.jsonl").calls
    assert [(a.attempt, a.status) for a in call.attempts] == [(1, 500), (2, 200)]
    assert "server had an error" in call.attempts[0].error and call.error is None


def test_cut_stream_and_dead_upstream_are_recorded(demo_server, proxy, tmp_path):
    body = json.dumps({"model": "demo", "stream": True, "messages": [{"role": "user", "content": "a long answer"}]})
    status, _, content = _raw(proxy.base_url + "/chat/completions", body.encode(), {"X-Demo-Fault": "cut-stream"})
    assert status == 200 and b"[DONE]" not in content and content.startswith(b"data: ")
    (call,) = read_trace(proxy.trace_dir / "conversation-001.jsonl").calls
    assert call.error == "stream ended before [DONE]" and call.failed
    # an upstream that is not there: the client gets a 502 in OpenAI's error shape, the trace the failure
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    with RecordingProxy(f"http://127.0.0.1:{dead}/v1", port=0, trace_dir=tmp_path / "dead") as p:
        client = openai.OpenAI(base_url=p.base_url, api_key=KEY, max_retries=0)
        with pytest.raises(openai.InternalServerError) as err:
            client.chat.completions.create(model="demo", messages=[{"role": "user", "content": "hi"}])
        assert err.value.status_code == 502 and "could not be reached" in err.value.message
    (failed,) = read_trace(tmp_path / "dead" / "conversation-001.jsonl").calls
    assert failed.status is None and "ConnectError" in failed.error
    assert failed.request == {"messages": [{"role": "user", "content": "hi"}], "model": "demo"}
    _assert_no_secret(tmp_path / "dead", KEY)


def test_upstream_url_mapping_and_bad_upstreams():
    assert upstream_url("https://api.example.com/v1", "/v1/chat/completions?x=1") == \
        "https://api.example.com/v1/chat/completions?x=1"
    assert upstream_url("http://h:1/api/paas/v4", "/v1/chat/completions") == "http://h:1/api/paas/v4/chat/completions"
    assert upstream_url("http://h:1", "/v1/models") == "http://h:1/v1/models"
    for bad in ("localhost:8000", "ftp://x/v1", "http://user:pw@host/v1"):
        with pytest.raises(ProxyError):
            RecordingProxy(bad, port=0)


def test_cli_proxy_records_until_interrupted(demo_server, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "cli"
    proc = subprocess.Popen([sys.executable, "-m", "agent_core.cli", "proxy", "--upstream", demo_server.base_url,
                             "--port", str(port), "--trace", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        first = proc.stdout.readline()
        assert "chain-studio proxy on http://127.0.0.1:" in first, proc.stderr.read() if not first else first
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, max_retries=0)
        for attempt in range(50):
            try:
                reply = client.chat.completions.create(model="demo", messages=[{"role": "user", "content": "我叫小红"}])
                break
            except openai.APIConnectionError:
                time.sleep(0.1)
        assert reply.choices[0].message.content == "你好，小红！很高兴认识你。"
    finally:
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 0, stderr
    assert "recorded 1 conversation(s)" in stdout
    trace = read_trace(out / "conversation-001.jsonl")
    assert [m.content for m in trace.stream] == ["我叫小红", "你好，小红！很高兴认识你。"]
    _assert_no_secret(out, KEY)


def test_malformed_and_chunked_request_bodies_pass_through(demo_server, proxy):
    status, _, content = _raw(proxy.base_url + "/chat/completions", b'{"model": "demo", "messages": [')
    assert status == 400 and b"could not parse the JSON body" in content
    body = json.dumps({"model": "demo", "messages": [{"role": "user", "content": "chunked hello"}]}).encode()
    with httpx2.Client(timeout=30) as c:     # a generator body goes out with Transfer-Encoding: chunked
        r = c.post(proxy.base_url + "/chat/completions", content=iter([body[:10], body[10:]]),
                   headers={"Content-Type": "application/json"})
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "Noted: chunked hello"
    assert demo_server.received == [b'{"model": "demo", "messages": [', body]
    calls = [c for p in sorted(proxy.trace_dir.glob("conversation-*.jsonl")) for c in read_trace(p).calls]
    assert [(c.status, c.attempts[0].request_body) for c in calls] == [
        (400, '{"model": "demo", "messages": ['), (200, json.loads(body))]
    assert "could not parse" in calls[0].error and proxy.errors == []
    first = json.loads((proxy.trace_dir / "index.jsonl").read_text().splitlines()[0])
    assert first["lineage_warnings"] == ["request 0: the body is str, not a JSON object; no messages taken from it"]


def test_concurrent_clients_each_get_a_complete_trace(demo_server, proxy):
    from concurrent.futures import ThreadPoolExecutor

    def client(n):
        history = []
        with httpx2.Client(timeout=30) as c:
            for turn in range(6):
                history.append({"role": "user", "content": f"client {n} turn {turn}"})
                r = c.post(proxy.base_url + "/chat/completions", json={"model": "demo", "messages": history,
                                                                       "stream": turn % 2 == 1},
                           headers={SESSION_HEADER: f"c{n}"})
                assert r.status_code == 200
                if turn % 2:
                    history.append({"role": "assistant", "content": "".join(
                        json.loads(line[5:])["choices"][0]["delta"].get("content") or ""
                        for line in r.text.splitlines() if line.startswith("data: {") and
                        json.loads(line[5:])["choices"])})
                else:
                    history.append(r.json()["choices"][0]["message"])
        return history

    with ThreadPoolExecutor(8) as pool:
        histories = list(pool.map(client, range(12)))
    proxy.stop()
    for n, history in enumerate(histories):
        trace = read_trace(proxy.trace_dir / f"session-c{n}.jsonl")
        assert len(trace.calls) == 6 and not trace.events and not trace.warnings
        assert [m.to_openai() for m in trace.stream] == history
    index = (proxy.trace_dir / "index.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["n"] for line in index) == list(range(1, 73))


def test_a_second_run_into_the_same_folder_writes_new_files(demo_server, tmp_path):
    """Run the proxy twice into one folder: the second run's conversations get new files (numbered on), each
    trace holds only its own run's calls, numbered from 0; nothing is refused or filed as a retry."""
    folder = tmp_path / "proxy"
    for run in range(2):
        with RecordingProxy(demo_server.base_url, port=0, trace_dir=folder) as p:
            client = openai.OpenAI(base_url=p.base_url, api_key="not-needed", max_retries=0)
            client.chat.completions.create(model="demo", messages=[{"role": "user", "content": f"run {run}: 我叫小明"}])
            client.models.list()
            client.close()
    assert sorted(f.name for f in folder.glob("*.jsonl")) == [
        "conversation-001.jsonl", "conversation-002.jsonl", "index.jsonl", "other-2.jsonl", "other.jsonl"]
    for name, run in (("conversation-001.jsonl", 0), ("conversation-002.jsonl", 1)):
        trace = read_trace(folder / name)
        assert [c.index for c in trace.calls] == [0] and len(trace.calls[0].attempts) == 1
        assert trace.calls[0].messages[-1]["content"] == f"run {run}: 我叫小明"
    index = [json.loads(line) for line in (folder / "index.jsonl").read_text().splitlines()]
    assert len(index) == 4 and not any(e.get("recording_error") for e in index)
