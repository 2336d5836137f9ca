"""The Responses API end to end: the real openai SDK -> the recording proxy -> the demo model, over real HTTP.

Each conversation's trace must lint clean, and keep-all replay of every call must equal what the demo model
itself recorded as the input it answered from (``DemoModelServer.responses.used``), an independent record.
"""
from __future__ import annotations

import json

import openai
import pytest

from agent_core.ingest.detect import load_any
from agent_core.lint.scan import lint_trace
from agent_core.replay.responses import replay_responses
from agent_core.serve.proxy import SESSION_HEADER, RecordingProxy
from agent_core.trim.window import KeepAll

KEY = "sk-proj-respTestKey0123456789abcdefXYZ"
TOOLS = [{"type": "function", "name": "get_weather", "description": "Weather in a city",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
WEATHER = '{"city": "Paris", "condition": "sunny", "temperature_c": 21, "humidity": 40}'


@pytest.fixture
def proxy(demo_server, tmp_path):
    with RecordingProxy(demo_server.base_url, port=0, trace_dir=tmp_path / "proxy") as p:
        yield p


def _run_conversations(client: openai.OpenAI) -> None:
    # 1: previous_response_id chain: plain, then a tool round, then streamed
    first = client.responses.create(model="gpt-4.1", input="Hi, my name is Ada.", instructions="Be brief.")
    second = client.responses.create(model="gpt-4.1", previous_response_id=first.id, input="Weather in Paris?",
                                     tools=TOOLS)
    [call] = second.output
    third = client.responses.create(model="gpt-4.1", previous_response_id=second.id, tools=TOOLS, input=[
        {"type": "function_call_output", "call_id": call.call_id, "output": WEATHER}])
    events = list(client.responses.create(model="gpt-4.1", previous_response_id=third.id,
                                          input="What is my name?", stream=True))
    assert events[-1].response.output_text == "Your name is Ada."
    # 2: no previous_response_id: the client re-sends the whole history (streamed tool round)
    history: list = [{"role": "user", "content": "Weather in Paris?"}]
    streamed = list(client.responses.create(model="gpt-4.1", input=history, tools=TOOLS, stream=True))
    done = streamed[-1].response
    history += [item.model_dump(exclude_none=True) for item in done.output]
    history.append({"type": "function_call_output", "call_id": done.output[0].call_id, "output": WEATHER})
    final = client.responses.create(model="gpt-4.1", input=history, tools=TOOLS)
    assert final.output_text.startswith("Paris: sunny")


def test_responses_through_the_proxy_lint_clean_and_replay_to_what_the_model_used(proxy, demo_server, tmp_path):
    client = openai.OpenAI(base_url=proxy.base_url, api_key=KEY, max_retries=0)
    _run_conversations(client)
    proxy.stop()
    assert proxy.errors == []
    files = sorted(proxy.trace_files())
    assert [f.name for f in files] == ["responses-001.jsonl", "responses-002.jsonl"]
    assert not (tmp_path / "proxy" / "other.jsonl").exists()
    index = [json.loads(line) for line in (tmp_path / "proxy" / "index.jsonl").read_text().splitlines()]
    assert [e["reason"].split(" ")[0] for e in index] == ["new", "previous_response_id", "previous_response_id",
                                                          "previous_response_id", "new", "inferred:"]
    checked = 0
    for path, calls in zip(files, (4, 2)):
        trace = load_any(str(path))
        assert len(trace.calls) == calls and all(c.status == 200 for c in trace.calls)
        assert [f for f in lint_trace(trace)] == []
        for replayed, c in zip(replay_responses(trace, KeepAll()), trace.calls):
            used = demo_server.responses.used[c.response["id"]]
            assert replayed.unresolved is None
            assert replayed.native_items() == used["input"], f"{path.name} call {c.index}"
            assert replayed.instructions == used["instructions"]
            assert replayed.reported_input_tokens == c.response["usage"]["input_tokens"]
            checked += 1
    assert checked == 6
    for f in tmp_path.joinpath("proxy").iterdir():
        assert KEY.encode() not in f.read_bytes()


def test_streamed_response_is_reassembled_and_the_session_header_names_the_file(proxy, tmp_path):
    client = openai.OpenAI(base_url=proxy.base_url, api_key=KEY, max_retries=0,
                           default_headers={SESSION_HEADER: "demo"})
    events = list(client.responses.create(model="gpt-4.1", input="Weather in Paris?", tools=TOOLS, stream=True))
    proxy.stop()
    [path] = proxy.trace_files()
    assert path.name == "session-demo-responses.jsonl"
    [c] = load_any(str(path)).calls
    assert c.stream and c.response == events[-1].response.model_dump(mode="json", exclude_unset=True)
