"""A payload log's responses are kept as their compact JSON text (trace/packed.py): every read gives exactly what
the line held (value, key order, types: 0 / 0.0 / -0.0 / false stay apart), the reply message stays the very
object the next request re-sends, and a stored trace (snapshot) keeps them packed."""
from __future__ import annotations

import json
import math
import pickle
import tracemalloc

import pytest

from agent_core.ingest import snapshot
from agent_core.ingest.detect import load_any
from agent_core.trace.packed import MAX_DEPTH, PackedJson, Packer, Unpacked, pack


def _typed(value):
    """``value`` with each scalar tagged by its exact type (``==`` holds for ``0``, ``0.0`` and ``False``), floats
    by ``repr`` (``0.0`` / ``-0.0``; NaN equal to itself), dicts as their item lists (key order)."""
    if type(value) is dict:
        return ("dict", [(k, _typed(v)) for k, v in value.items()])
    if type(value) is list:
        return ("list", [_typed(v) for v in value])
    if type(value) is float:
        return ("float", repr(value))
    return (type(value).__name__, value)


RESPONSES = [
    # a Chat Completions response with the usual fields and nested details
    {"id": "chatcmpl-1", "object": "chat.completion", "created": 1764000001, "model": "gpt-4o-mini",
     "choices": [{"index": 0, "message": {"role": "assistant", "content": "a0", "refusal": None},
                  "logprobs": None, "finish_reason": "stop"}],
     "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11,
               "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0}},
     "system_fingerprint": "fp_1"},
    # look-alike numbers that serialize differently, another key order, text beyond ASCII and a lone surrogate
    {"usage": {"total_tokens": 0.0, "prompt_tokens": -0.0, "completion_tokens": False, "cost": 1e-7, "big": 2 ** 70},
     "choices": [{"finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [
         {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"q\": \"你好 😀\"}"}}]}}],
     "model": "m\ud800", "id": "x"},
    # two choices: only the first one's message is the reply
    {"choices": [{"message": {"role": "assistant", "content": "a2"}}, {"message": {"role": "assistant",
                                                                                 "content": "other"}}]},
    # no reply to take out: a null message, no choices, choices that are not a list
    {"choices": [{"message": None, "finish_reason": "length"}]},
    {"error": {"message": "rate limited", "code": 429}},
    {"choices": {"0": {"message": {"role": "assistant", "content": "odd"}}}},
]


def _log(tmp_path, extra: str = "") -> tuple:
    """A full-history log, one response per line (as the app sent the reply back, when it is one)."""
    lines, messages = [], [{"role": "system", "content": "s"}]
    for k, response in enumerate(RESPONSES):
        messages = messages + [{"role": "user", "content": f"q{k}"}]
        lines.append(json.dumps({"request": {"model": "m", "messages": messages}, "response": response}))
        reply = response.get("choices")
        if isinstance(reply, list) and isinstance(reply[0].get("message"), dict):
            messages = messages + [reply[0]["message"]]
    lines.append('{"request": {"model": "m", "messages": []}, "response": {"n": NaN, "i": Infinity, "x": 1e400}}')
    path = tmp_path / "responses.jsonl"
    path.write_text("\n".join(lines) + "\n" + extra, encoding="utf-8")
    return path, lines


def test_each_response_reads_back_as_its_line_sent_it(tmp_path):
    path, lines = _log(tmp_path)
    trace = load_any(path)
    assert len(trace.calls) == len(lines)
    for call, line in zip(trace.calls, lines):
        sent = json.loads(line)["response"]           # the real json library on that line alone
        assert type(Unpacked.stored(call, "response")) is PackedJson
        assert _typed(call.response) == _typed(sent)
        assert _typed(call.response) == _typed(call.response)     # every read the same
    last = trace.calls[-1].response
    assert math.isnan(last["n"]) and last["i"] == last["x"] == math.inf


def test_the_reply_is_the_object_the_next_request_sends(tmp_path):
    path, _ = _log(tmp_path)
    trace = load_any(path)
    for k in (0, 1, 2):
        call, following = trace.calls[k], trace.calls[k + 1]
        reply = call.response["choices"][0]["message"]
        assert reply is call.reply is following.request["messages"][-2]      # one object, not an equal copy
        assert call.response is not call.response                           # the rest is parsed per read
    assert trace.calls[3].reply is None and trace.calls[4].reply is None and trace.calls[5].reply is None


def test_responses_are_kept_in_a_quarter_of_their_objects_memory():
    """The point of packing: 1,000 responses (each its own id, time and counts, reply included) kept as deflated
    text by one file's ``Packer`` cost under a quarter of what their parsed objects do."""
    def body(k: int) -> dict:
        return {**RESPONSES[0], "id": f"chatcmpl-{k:08d}", "created": 1764000000 + k,
                "choices": [{**RESPONSES[0]["choices"][0], "message": {"role": "assistant", "content": f"answer {k}"}}],
                "usage": {**RESPONSES[0]["usage"], "prompt_tokens": 9000 + 37 * k, "total_tokens": 9050 + 37 * k}}
    texts = [json.dumps(body(k)) for k in range(1000)]
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        parsed = [json.loads(t) for t in texts]
        as_objects = tracemalloc.get_traced_memory()[0] - base
        packer = Packer()
        base = tracemalloc.get_traced_memory()[0]
        packed = [packer(b, keep_reply=False) for b in parsed]
        as_text = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert all(type(p) is PackedJson and p.reply is None for p in packed)
    assert [_typed(p.value()) for p in packed] == [_typed(json.loads(t)) for t in texts]
    assert as_text < 0.25 * as_objects, f"{as_text / as_objects:.2f}"


@pytest.mark.parametrize("body", [
    {"choices": ({"message": {"role": "assistant"}},)},      # a tuple would come back a list
    {1: "a"},                                                 # a key json would turn into "1"
    {"v": {1, 2}},                                            # not JSON at all
])
def test_what_would_not_come_back_the_same_is_kept_as_it_is(body):
    assert pack(body) is body
    assert pack([1]) == [1] and pack(None) is None


def test_a_deep_body_is_kept_as_it_is():
    deep: dict = {"choices": [{"message": {"role": "assistant"}}]}
    for _ in range(MAX_DEPTH):
        deep = {"d": deep}
    assert pack(deep) is deep
    shallow = {"d": {"d": {"e": [1, {"f": 2.5}]}}}
    assert _typed(pack(shallow).value()) == _typed(shallow)


def test_assigning_a_response_keeps_the_value_given(tmp_path):
    path, _ = _log(tmp_path)
    call = load_any(path).calls[0]
    mine = {"id": "mine"}
    call.response = mine
    assert call.response is mine and call.reply is None


def test_a_stored_trace_keeps_responses_packed(tmp_path, monkeypatch):
    monkeypatch.setenv(snapshot.ENV, str(tmp_path / "traces"))
    monkeypatch.setattr(snapshot, "MIN_BYTES", 0)
    path, lines = _log(tmp_path)
    parsed = load_any(path, keep=False)
    digest = snapshot.file_digest(path)
    assert snapshot.save(digest, parsed)
    loaded = snapshot.load(digest)          # through the loader that accepts only a trace's own classes
    assert loaded is not None
    for call, line in zip(loaded.calls, lines):
        assert type(Unpacked.stored(call, "response")) is PackedJson
        assert _typed(call.response) == _typed(json.loads(line)["response"])
    assert loaded.calls[0].reply is loaded.calls[1].request["messages"][-2]
    one = pack({"a": [1, 2.0]})
    assert pickle.loads(pickle.dumps(one)) == one and pickle.loads(pickle.dumps(one)).value() == {"a": [1, 2.0]}
    zdicts = {id(Unpacked.stored(c, "response").zdict) for c in loaded.calls}
    assert len(zdicts) == 1                 # one dictionary for the file, stored once


def test_a_reply_sent_back_changed_is_packed_with_its_response(tmp_path):
    """An app that sends a tool-call reply back with ``"content": ""`` for the ``null`` it got sends other bytes:
    the reply is not shared, so it is kept as text with the rest of its response; the last reply, which joins
    the stream, stays an object."""
    reply = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    first = [{"role": "user", "content": "q"}]
    second = first + [{**reply, "content": ""}, {"role": "tool", "tool_call_id": "c1", "content": "r"}]
    final = {"role": "assistant", "content": "done"}
    lines = [json.dumps({"request": {"model": "m", "messages": first}, "response": {"choices": [{"message": reply}]}}),
             json.dumps({"request": {"model": "m", "messages": second}, "response": {"choices": [{"message": final}]}})]
    path = tmp_path / "changed.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    trace = load_any(path)
    a, b = trace.calls
    assert type(Unpacked.stored(a, "response")) is PackedJson and Unpacked.stored(a, "response").reply is None
    assert _typed(a.response) == _typed(json.loads(lines[0])["response"])
    assert _typed(a.reply) == _typed(reply) and b.request["messages"][1]["content"] == ""
    assert Unpacked.stored(b, "response").reply is b.reply      # the last reply: one object with the stream's
    assert trace.stream[-1].openai_cache is b.reply
