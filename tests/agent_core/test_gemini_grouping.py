"""Gemini calls grouped into conversations by continuity, as Chat Completions and Anthropic calls are.

The real ``google-genai`` SDK talks to the demo model's Gemini endpoint through the real recording proxy, with no
session header: a two-round function-calling chat must land in ONE trace of two calls, its grouping labelled as
inferred with its evidence (``index.jsonl``'s ``reason``), and a request that extends two open conversations
equally becomes an ``ambiguous`` warning, never a silent guess. Expected shapes come from the SDK's own typed
responses.
"""
from __future__ import annotations

import json

import httpx
from google import genai
from google.genai import types

from agent_core.ingest.detect import load_any
from agent_core.ingest.payload_log import traces_from_requests
from agent_core.serve.proxy import RecordingProxy

KEY = "AIzaSyProxyTestKey0123456789abcdefXYZ"
WEATHER = {"city": "Paris", "condition": "sunny", "temperature_c": 21, "humidity": 40}


def _config() -> types.GenerateContentConfig:
    tool = types.Tool(function_declarations=[types.FunctionDeclaration(
        name="get_weather", description="Weather for a city",
        parameters_json_schema={"type": "object", "properties": {"city": {"type": "string"}}})])
    return types.GenerateContentConfig(tools=[tool],
                                       automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))


def _index(directory) -> list[dict]:
    return [json.loads(line) for line in (directory / "index.jsonl").read_text(encoding="utf-8").splitlines()]


def test_a_two_round_function_calling_chat_is_one_trace_of_two_calls(demo_server, tmp_path):
    root = demo_server.base_url.removesuffix("/v1")
    with RecordingProxy(root, port=0, trace_dir=tmp_path / "proxy") as proxy:
        client = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=proxy.base_url.removesuffix("/v1")))
        config = _config()
        contents = [types.Content(role="user", parts=[types.Part(text="What's the weather in Paris?")])]
        first = client.models.generate_content(model="gemini-2.5-flash", contents=contents, config=config)
        assert [(c.name, c.args) for c in first.function_calls] == [("get_weather", {"city": "Paris"})]
        contents += [first.candidates[0].content, types.Content(role="user", parts=[
            types.Part.from_function_response(name="get_weather", response=WEATHER)])]
        second = client.models.generate_content(model="gemini-2.5-flash", contents=contents, config=config)
        assert second.text == "Paris: sunny, 21°C, humidity 40%."
    assert proxy.errors == []
    (trace_file,) = proxy.trace_files()          # one conversation, not one trace per call
    trace = load_any(trace_file)
    assert len(trace.calls) == 2
    assert [c["role"] for c in trace.calls[1].request["contents"]] == ["user", "model", "user"]
    entries = [e for e in _index(tmp_path / "proxy") if e.get("conversation")]
    assert [e["conversation"] for e in entries] == [1, 1]
    # inferred, with its evidence: the second request holds the first one's contents, then the first response's
    # candidate content (as the SDK re-serialized it: same parts, other key order), then more
    assert entries[0]["reason"] == "new: first request"
    assert entries[1]["reason"] == "extends conversation 1's last payload (1 of 1 messages kept, its reply sent back)"
    assert "lineage_warnings" not in entries[1]
    # the stream shows the contents as sent (Gemini's own shape), each once, then the last reply as answered
    sent = trace.calls[1].request["contents"]
    assert [m.to_openai() for m in trace.stream] == [*sent, second.candidates[0].content.model_dump(
        mode="json", exclude_none=True)]
    assert trace.calls[0].response["candidates"][0]["content"]["parts"] == sent[1]["parts"]
    for path in (tmp_path / "proxy").iterdir():
        assert KEY.encode() not in path.read_bytes(), path.name
    # keep-all replays exactly what was sent, judged by Gemini's own rules
    from agent_core.replay.engine import policy_for_trace, replay

    result = replay(trace, policy_for_trace("keep-all", {}, trace))
    assert [r.messages for r in result.calls] == [c.request["contents"] for c in trace.calls]
    assert all(r.same for r in result.calls) and result.totals["tokens"] == result.totals["recorded_tokens"]


def _body(*contents) -> dict:
    return {"contents": list(contents)}


def _user(text):
    return {"role": "user", "parts": [{"text": text}]}


def _model(text):
    return {"role": "model", "parts": [{"text": text}]}


def test_interleaved_gemini_conversations_are_told_apart_by_their_contents():
    bodies = [_body(_user("plan a trip")), _body(_user("write a poem")),                       # two conversations
              _body(_user("plan a trip"), _model("Where to?"), _user("Rome")),                 # extends the first
              _body(_user("write a poem"), _model("About what?"), _user("the sea"))]           # extends the second
    traces = traces_from_requests(bodies)
    assert [[c.request["contents"][0]["parts"][0]["text"] for c in t.calls] for t in traces] == [
        ["plan a trip"] * 2, ["write a poem"] * 2]
    assert not [w for t in traces for w in t.warnings if w.startswith("ambiguous")]


def test_a_request_extending_two_open_conversations_equally_is_a_warning_not_a_silent_guess():
    same = [_body(_user("hello")), _body(_user("hello")),              # the same opening twice: two conversations
            _body(_user("hello"), _model("Hi!"), _user("hello again"))]   # extends both
    traces = traces_from_requests(same)
    assert sorted(len(t.calls) for t in traces) == [1, 2]
    (note,) = [w for t in traces for w in t.warnings if w.startswith("ambiguous: ")]
    assert note == ("ambiguous: request 2 extends conversation 1 and conversation 2, whose histories are identical; "
                    "filed under the latest, conversation 2")
    # different histories, the same number of messages kept: filed under the first, and said
    tie = [_body(_user("hello"), _user("continue")), _body(_user("hi"), _user("continue")),
           _body(_user("hey"), _user("continue"), _model("ok"), _user("more"))]
    traces = traces_from_requests(tie)
    (note,) = [w for t in traces for w in t.warnings if w.startswith("ambiguous: ")]
    assert note.startswith("ambiguous: request 2 extends conversation 1 and conversation 2 equally")


def test_gemini_contents_that_do_not_extend_the_last_payload_start_a_new_conversation(demo_server, tmp_path):
    root = demo_server.base_url.removesuffix("/v1")
    url = "/v1beta/models/gemini-2.5-flash:generateContent"
    with RecordingProxy(root, port=0, trace_dir=tmp_path / "proxy") as proxy:
        for body in (_body(_user("one")), _body(_user("two"))):
            answer = httpx.post(proxy.base_url.removesuffix("/v1") + url, json=body, headers={"x-goog-api-key": KEY})
            assert answer.status_code == 200
    assert len(proxy.trace_files()) == 2
    assert [e["reason"] for e in _index(tmp_path / "proxy")][1] == "new: extends no conversation's last payload"


def test_an_imported_jsonl_of_gemini_bodies_shows_their_contents_as_sent(tmp_path):
    first = _body(_user("plan a trip"))
    second = _body(_user("plan a trip"), _model("Where to?"), _user("Rome"))
    path = tmp_path / "gemini.jsonl"
    path.write_text("\n".join(json.dumps(b) for b in (first, second)) + "\n", encoding="utf-8")
    trace = load_any(path)
    assert (trace.format, len(trace.calls), trace.warnings) == ("request-jsonl", 2, [])
    assert [m.to_openai() for m in trace.stream] == second["contents"]        # Gemini's own shape, each once
    assert [len(c.message_ids) for c in trace.calls] == [1, 3]
    assert trace.calls[1].message_ids[0] == trace.calls[0].message_ids[0]
