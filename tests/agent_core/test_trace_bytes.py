"""Every byte as sent: stored request bodies re-serialize exactly, and each call says whether that is verified."""
from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_core.chat.client import Endpoint, LLMClient
from agent_core.core.msg import Msg
from agent_core.export.formats import export_file
from agent_core.trace.events import CallAttempt
from agent_core.trace.reader import read_trace
from agent_core.trace.writer import TraceWriter

URL = "http://127.0.0.1:9/v1/chat/completions"


def _compact(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _objects(children):
    """A JSON object whose keys come in whatever order hypothesis draws them (``dict`` keeps it)."""
    return st.lists(st.tuples(st.text(max_size=4), children), max_size=4, unique_by=lambda kv: kv[0]).map(dict)


_leaves = (st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70)
           | st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([1, 1.0, 0, 0.0, -0.0, 2.5e-8])
           | st.text(max_size=6) | st.sampled_from(["成都", "é", "\u2028", "😀", "\x00", '"\\/', "long text " * 20]))
json_values = st.recursive(_leaves, lambda c: st.lists(c, max_size=3) | _objects(c), max_leaves=10)


def _shuffled(value, rng: random.Random):
    """The same JSON value with the keys of some objects, at any depth, in another order."""
    if isinstance(value, dict):
        keys = list(value)
        if rng.random() < 0.5:
            rng.shuffle(keys)
        return {k: _shuffled(value[k], rng) for k in keys}
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


messages = _objects(json_values).map(lambda m: {"role": "user", **m} if len(m) % 2 else m)
calls = st.lists(st.tuples(st.lists(messages, max_size=3),          # new messages this call sends
                           _objects(json_values),                     # other request keys (model, tools ...)
                           _objects(json_values).map(lambda r: {"content": None, **r}),    # the reply
                           st.booleans(),                             # the app added its messages to memory
                           st.integers(0, 2**32)),                    # how the reply's keys are reordered
                 min_size=1, max_size=5)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls)
def test_random_bodies_survive_write_read_export_with_key_order_at_every_depth(tmp_path_factory, script):
    path = tmp_path_factory.mktemp("bytes") / "t.jsonl"
    sent: list[dict] = []
    history: list = []
    with TraceWriter(path) as writer:
        for n, (new, head, reply, remembered, seed) in enumerate(script):
            if remembered:
                for m in new:
                    if isinstance(m, dict):
                        writer.message_added(Msg.from_openai(m))
            history = history + new
            body = dict(head)
            body["messages"] = history
            keys = list(body)
            random.Random(seed).shuffle(keys)
            body = {k: body[k] for k in keys}
            sent.append(json.loads(_compact(body)))       # a snapshot: what went over the wire
            raw = _compact(body).encode("utf-8")
            writer.call_attempt(CallAttempt(
                call=n, attempt=1, method="POST", url=URL, request_body=body, status=200,
                response_body={"id": f"r{n}", "choices": [{"index": 0, "message": reply}]},
                request_sha256=hashlib.sha256(raw).hexdigest()))
            # the app sends the reply back with keys reordered at any depth (as a typed client does) and a null
            # content as "" (the one change Python's == sees, so the body is stored as a patch of the reply)
            back = _shuffled(reply, random.Random(seed))
            if "content" in back and back["content"] is None:
                back["content"] = ""
            history = history + [back]
    trace = read_trace(path)
    assert [_compact(c.request) for c in trace.calls] == [_compact(b) for b in sent]
    exported, _ = export_file(path, "payloads")          # what `chain-studio export --as payloads` prints
    assert exported.split("\n") == [_compact(b) for b in sent] + [""]       # not splitlines: U+2028 is in bodies
    assert [c.bytes_verified for c in trace.calls] == [True] * len(sent)


def test_a_reply_sent_back_with_reordered_tool_call_keys_comes_back_in_the_order_sent(tmp_path):
    """The issue's case: ``{"id","function","type"}`` sent back after ``{"id","type","function"}`` came in."""
    long = "x" * 400          # long arguments make the sent-back message a small patch of the reply
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": long}}
    reply = {"role": "assistant", "content": None, "tool_calls": [call]}
    back = {"role": "assistant", "content": "",        # null turned into "", the one change Python's == sees
            "tool_calls": [{"id": "call_1", "function": {"name": "f", "arguments": long}, "type": "function"}]}
    user = {"role": "user", "content": "hi"}
    payloads = [{"model": "m", "messages": [user]},
                {"model": "m", "messages": [user, back, {"role": "tool", "tool_call_id": "call_1", "content": "r"}]}]
    with TraceWriter(tmp_path / "t.jsonl") as writer:
        for n, body in enumerate(payloads):
            writer.call_attempt(CallAttempt(call=n, attempt=1, method="POST", url=URL, request_body=body,
                                            status=200, response_body={"choices": [{"message": reply}]}))
    trace = read_trace(tmp_path / "t.jsonl")
    assert _compact(trace.calls[1].request["messages"][1]) == _compact(back)
    assert list(trace.calls[1].request["messages"][1]["tool_calls"][0]) == ["id", "function", "type"]


def test_the_recording_client_stores_the_hash_of_the_bytes_the_sdk_sent(demo_server, tmp_path):
    path = tmp_path / "t.jsonl"
    with TraceWriter(path) as writer:
        client = LLMClient(Endpoint(base_url=demo_server.base_url, model="demo"), recorder=writer)
        client.complete([{"role": "user", "content": "我叫小明 😀"}], temperature=0.5, top_p=1, seed=7)
        client.complete([{"role": "user", "content": "stream it"}], stream=True)
        client.close()
    trace = read_trace(path)
    # the demo server logs the exact bytes it received: an independent copy of what the SDK sent
    assert [c.request_sha256 for c in trace.calls] == [hashlib.sha256(raw).hexdigest()
                                                       for raw in demo_server.received]
    assert [c.bytes_verified for c in trace.calls] == [True, True]
    assert trace.calls[0].bytes_note == "byte-identical: verified"
    assert isinstance(trace.calls[0].request["temperature"], float) and trace.calls[0].request["top_p"] == 1
    # a copy written by `export --as trace` keeps the hashes, and so the verdicts
    copy = read_trace(Path(export_file(path, "trace", output=tmp_path / "copy.jsonl")[1]))
    assert [(c.request_sha256, c.bytes_verified) for c in copy.calls] == \
        [(c.request_sha256, c.bytes_verified) for c in trace.calls]


def test_the_proxy_stores_the_hash_of_the_bytes_the_client_sent(demo_server, tmp_path):
    import openai

    from agent_core.serve.proxy import RecordingProxy

    with RecordingProxy(demo_server.base_url, port=0, trace_dir=tmp_path / "proxy") as proxy:
        client = openai.OpenAI(base_url=proxy.base_url, api_key="sk-test", max_retries=0)
        tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}}}}]
        first = [{"role": "user", "content": "What is the weather in Paris?"}]
        reply = client.chat.completions.create(model="demo", messages=first, tools=tools,
                                               temperature=1.0).choices[0].message
        back = reply.model_dump(exclude_none=True)      # pydantic's key order, not the response's
        client.chat.completions.create(model="demo", temperature=1.0, tools=tools, messages=[
            *first, back, {"role": "tool", "tool_call_id": back["tool_calls"][0]["id"], "content": "sunny"}])
        client.close()
    calls = read_trace(tmp_path / "proxy" / "conversation-001.jsonl").calls
    assert [c.request_sha256 for c in calls] == [hashlib.sha256(raw).hexdigest() for raw in demo_server.received]
    assert [_compact(c.request).encode() for c in calls] == demo_server.received
    assert [c.bytes_verified for c in calls] == [True, True]


def test_a_body_that_re_serializes_differently_is_not_verified(tmp_path):
    raw = b'{"model": "m",  "n": 1e2, "messages": []}'    # odd spacing and 1e2: no serializer writes these bytes
    body = json.loads(raw)
    path = tmp_path / "t.jsonl"
    with TraceWriter(path) as writer:
        writer.call_attempt(CallAttempt(call=0, attempt=1, method="POST", url=URL, request_body=body, status=200,
                                        request_sha256=CallAttempt.sha256_of(raw)))
        spaced = json.dumps(body).encode()        # json.dumps' defaults (requests, old httpx) are recognised
        writer.call_attempt(CallAttempt(call=1, attempt=1, method="POST", url=URL, request_body=body, status=200,
                                        request_sha256=CallAttempt.sha256_of(spaced)))
        writer.call_attempt(CallAttempt(call=2, attempt=1, method="POST", url=URL, request_body=body, status=200))
        writer.call_attempt(CallAttempt(call=3, attempt=1, method="POST", url=URL, request_body="not json {",
                                        status=400, request_sha256=CallAttempt.sha256_of(b"not json {")))
        writer.call_attempt(CallAttempt(call=4, attempt=1, method="POST", url=URL, request_body=[1, 2.0],
                                        status=400, request_sha256=CallAttempt.sha256_of(b"[1,2.0]")))
    calls = read_trace(path).calls
    assert [c.bytes_verified for c in calls] == [False, True, None, True, True]
    assert [c.bytes_note for c in calls[:3]] == ["not verified: the stored body re-serializes differently",
                                                 "byte-identical: verified", "no raw-bytes hash recorded"]
    assert calls[0].request_sha256 == hashlib.sha256(raw).hexdigest()


def test_old_traces_have_no_hash_and_say_so(sample_traces):
    trace = read_trace(min(sample_traces.glob("*.jsonl")))
    assert trace.calls and {c.bytes_verified for c in trace.calls} == {None}


def test_export_json_prints_the_exact_payload_and_the_verdict_on_stderr(demo_server, tmp_path, capsys):
    from agent_core.cli.main import main

    path = tmp_path / "t.jsonl"
    with TraceWriter(path) as writer:
        client = LLMClient(Endpoint(base_url=demo_server.base_url, model="demo"), recorder=writer)
        client.complete([{"role": "user", "content": "write to ada@example.com"}])
        client.close()
        writer.call_attempt(CallAttempt(call=1, attempt=1, method="POST", url=URL, request_body={"model": "m"}))
    expected = json.loads(demo_server.received[0])
    for call, note in (("0", "byte-identical: verified"), ("1", "no raw-bytes hash recorded")):
        assert main(["export", str(path), "--as", "json", "--call", call]) == 0
        out, err = capsys.readouterr()
        assert json.loads(out) == (expected if call == "0" else {"model": "m"})
        assert out == json.dumps(json.loads(out), ensure_ascii=False, indent=2) + "\n"     # nothing else on stdout
        assert err == note + "\n"
    # a redacted copy is not what was sent, and says so
    assert main(["export", str(path), "--as", "json", "--call", "0", "--redact"]) == 0
    out, err = capsys.readouterr()
    assert "ada@example.com" not in out and err == "not verified: the stored body re-serializes differently\n"
