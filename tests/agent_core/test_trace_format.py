from __future__ import annotations

import json

import pytest

from agent_core.chat.agent import Agent
from agent_core.chat.client import Endpoint, LLMClient
from agent_core.chat.memory import ShortTermMemory
from agent_core.core.errors import MalformedTraceError, UnsupportedTraceVersion
from agent_core.core.msg import message_key
from agent_core.trace.reader import parse_trace, read_trace
from agent_core.trace.writer import TraceWriter, write_trace
from agent_core.trim.window import MaxMessages


def _record(server, path, turns, max_messages=40):
    writer = TraceWriter(path, meta={"model": "demo"})
    client = LLMClient(Endpoint(base_url=server.base_url, model="demo"), recorder=writer)
    agent = Agent(client, ShortTermMemory(policy=MaxMessages(max_messages), recorder=writer, system_prompt="sys"))
    for t in turns:
        agent.chat(t)
    writer.close()
    return read_trace(path)


def test_reader_gives_exact_payloads_stream_and_events(demo_server, tmp_path):
    trace = _record(demo_server, tmp_path / "t.jsonl", ["我叫小明", "帮我查一下成都天气", "我刚才说我叫什么名字？"] * 4,
                    max_messages=8)
    received = [json.loads(raw) for raw in demo_server.received]
    assert [c.request for c in trace.calls] == received
    assert trace.stream[0].role == "system" and trace.stream[1].content == "我叫小明"
    assert len(trace.stream) == 1 + 4 * (2 + 4 + 2)
    assert trace.events and all(e.event.type == "trim" for e in trace.events)
    # each call's payload maps onto stream ids, and the call was made after `stream_index` adds
    by_id = {m.id: m for m in trace.stream}
    for call in trace.calls:
        assert None not in call.message_ids
        assert [by_id[i].to_openai() for i in call.message_ids] == call.messages
        assert call.messages[-1] == trace.stream[call.stream_index - 1].to_openai()
    assert trace.calls[0].usage["prompt_tokens"] > 0


def test_200_call_trace_is_linear_in_distinct_message_bytes(demo_server, tmp_path):
    path = tmp_path / "long.jsonl"
    turns = [f"第{i}轮。我在整理第 {i} 份订单的备注：客户希望周{i % 7 + 1}送货，联系人电话尾号 {1000 + i}，"
             f"包装要求防潮，另外请记住数字 {i * 7} 以便之后核对。Please keep the delivery notes for order {i} "
             f"short and confirm the window before {i % 12 + 8}:00." for i in range(200)]
    trace = _record(demo_server, path, turns, max_messages=10_000)
    assert len(trace.calls) == 200
    distinct = {message_key(m) for c in trace.calls for m in c.messages}
    distinct_bytes = sum(len(k.encode()) for k in distinct)
    naive = sum(len(json.dumps(c.request, ensure_ascii=False).encode()) for c in trace.calls)
    size = path.stat().st_size
    assert size < 3 * distinct_bytes, (size, distinct_bytes)
    assert naive > 10 * size        # what a log of whole payloads would cost


def test_torn_last_line_is_reported_and_skipped(demo_server, tmp_path):
    path = tmp_path / "t.jsonl"
    full = _record(demo_server, path, ["你好", "帮我查一下成都天气"])
    data = path.read_bytes()
    torn = parse_trace(data[:-15], "t.jsonl")
    assert len(torn.warnings) == 1 and "incomplete" in torn.warnings[0]
    assert len(torn.stream) == len(full.stream) - 1


def test_malformed_line_names_line_and_column(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"type":"header","format":"chain-studio-trace","version":1}\n{"type": "add", oops}\n{}\n')
    with pytest.raises(MalformedTraceError) as err:
        read_trace(path)
    assert err.value.line == 2 and err.value.column == 17
    assert str(err.value).startswith(f"{path}:2:17: invalid JSON")


def test_future_and_missing_versions_are_refused(tmp_path):
    with pytest.raises(UnsupportedTraceVersion, match="newer Chain Studio"):
        parse_trace('{"type":"header","format":"chain-studio-trace","version":99}\n')
    with pytest.raises(UnsupportedTraceVersion, match="no version"):
        parse_trace('{"type":"header","format":"chain-studio-trace"}\n')
    with pytest.raises(MalformedTraceError, match="not a chain-studio-trace"):
        parse_trace('{"type":"call"}\n')


def test_dangling_body_reference_is_a_clear_error():
    text = ('{"type":"header","format":"chain-studio-trace","version":1}\n'
            '{"type":"add","id":"m1","ts":"2026-01-01T00:00:00.000Z","body":5}\n')
    with pytest.raises(MalformedTraceError, match=r"<trace>:2:1: refers to message body 5"):
        parse_trace(text)


def test_write_trace_round_trips(demo_server, tmp_path):
    trace = _record(demo_server, tmp_path / "a.jsonl", ["我叫小明", "帮我查一下成都天气"], max_messages=4)
    write_trace(trace, tmp_path / "b.jsonl")
    again = read_trace(tmp_path / "b.jsonl")
    assert [c.request for c in again.calls] == [c.request for c in trace.calls]
    assert [m.export() for m in again.stream] == [m.export() for m in trace.stream]
    assert [(e.after_add, e.event.removed) for e in again.events] == [(e.after_add, e.event.removed) for e in trace.events]


def test_fixture_v1_still_loads():
    from agent_core.core.paths import PROJECT_ROOT
    trace = read_trace(PROJECT_ROOT / "tests" / "fixtures" / "traces" / "v1" / "classic.jsonl")
    assert len(trace.calls) == 4 and trace.calls[2].messages[-1]["role"] == "tool"


def _edge_case_script():
    """Adds and attempts that hit every left-out-field rule and each of its exceptions."""
    from datetime import datetime, timedelta, timezone

    from agent_core.core.msg import Msg
    from agent_core.trace.events import CallAttempt
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    m = [Msg(role="system", content="s", id="alpha", timestamp=t0),                       # no trailing number
         Msg(role="user", content="u", id="x-009", parent_id="alpha", timestamp=t0 + timedelta(milliseconds=5)),
         Msg(role="assistant", content="a", id="x-010", parent_id="x-009", timestamp=t0 + timedelta(milliseconds=5)),
         Msg(role="user", content="v", id="x-012", parent_id=None, timestamp=t0 - timedelta(milliseconds=3)),
         Msg(role="user", content="w", id="x-013", parent_id="x-012", timestamp=t0 + timedelta(microseconds=2500))]
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    body = [x.to_openai() for x in m]
    reply = {"role": "assistant", "content": "hi"}

    def attempt(call, request, response=None, n=1, status=200, started="2026-01-01T00:00:00.000Z", error=None):
        return CallAttempt(call=call, attempt=n, method="POST", url="http://h/v1/chat/completions", request_body=request,
                           status=status, response_body=response, started_at=started, error=error, latency_ms=1.0)
    return [
        m[0], m[1],
        attempt(0, {"model": "m", "messages": body[:2], "tools": tools},
                {"id": "r1", "choices": [{"index": 0, "message": reply}]}),
        m[2],
        attempt(1, {"model": "m", "messages": body[:3], "tools": tools}, None, status=500,
                started="2026-01-01 00:00:01", error="boom"),
        attempt(1, {"model": "m", "messages": body[:3], "tools": tools}, {"id": "r2", "choices": [{"message": None}]},
                n=2, started=None),
        attempt(2, {"model": "m", "messages": None}, {"id": "r3", "choices": [{"message": reply}]},
                started="2026-01-01T00:00:03.000Z"),
        m[3],
        attempt(3, {"model": "m", "messages": [body[3], body[0]], "tools": None},
                {"id": "r4", "choices": [{"message": reply}, {"message": {"role": "assistant", "content": "b"}}]}),
        attempt(5, "not json", None, status=None, error="refused"),
        m[4],
        attempt(6, {"messages": body, "tools": tools}, {"choices": []}, started="2026-01-01T00:00:02.000Z"),
    ]


def _play(writer, steps):
    from agent_core.core.msg import Msg
    for step in steps:
        if isinstance(step, Msg):
            writer.message_added(step)
        else:
            writer.call_attempt(step)


def _assert_read_back(trace, steps):
    from agent_core.core.msg import Msg, format_timestamp, parse_timestamp
    msgs = [s for s in steps if isinstance(s, Msg)]
    assert [(x.id, x.parent_id, x.timestamp, x.to_openai()) for x in trace.stream] == \
        [(x.id, x.parent_id, parse_timestamp(format_timestamp(x.timestamp)), x.to_openai()) for x in msgs]
    attempts = [a for c in trace.calls for a in c.attempts]
    expected = [s for s in steps if not isinstance(s, Msg)]
    got = [(a.call, a.attempt, a.status, a.started_at, a.request_body, a.response_body, a.error) for a in attempts]
    assert got == [(a.call, a.attempt, a.status, a.started_at, a.request_body, a.response_body, a.error)
                   for a in expected]


def test_every_left_out_field_comes_back_exactly(tmp_path):
    steps = _edge_case_script()
    with TraceWriter(tmp_path / "t.jsonl") as writer:
        _play(writer, steps)
    _assert_read_back(read_trace(tmp_path / "t.jsonl"), steps)
    lines = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines()]
    adds = [e for e in lines if e["type"] == "add"]
    # x-010 follows x-009 in the same millisecond: neither id, time nor parent is written
    assert "id" not in adds[2] and "ts" not in adds[2] and "dt" not in adds[2] and "parent_id" not in adds[2]
    assert adds[3]["id"] == "x-012" and adds[3]["dt"] == -8 and "id" not in adds[4]


def test_a_resumed_writer_continues_every_prediction(tmp_path):
    steps = _edge_case_script()
    path = tmp_path / "t.jsonl"
    for part in (steps[:5], steps[5:9], steps[9:]):
        with TraceWriter(path) as writer:
            _play(writer, part)
    _assert_read_back(read_trace(path), steps)
    assert path.read_text(encoding="utf-8").count('"type":"header"') == 1


def test_resuming_after_a_torn_last_line_drops_it_and_keeps_the_file_readable(tmp_path):
    steps = _edge_case_script()
    path = tmp_path / "t.jsonl"
    with TraceWriter(path) as writer:
        _play(writer, steps[:5])
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"type":"add","value":{"role":"user","cont')      # the writer was killed mid-line
    with TraceWriter(path) as writer:
        _play(writer, steps[5:])
    trace = read_trace(path)
    assert trace.warnings == []
    _assert_read_back(trace, steps)


def test_a_time_delta_out_of_range_is_one_located_error():
    """`dt` far past datetime's range (found by the fuzz test): a MalformedTraceError at its line, not OverflowError."""
    from agent_core.core.errors import MalformedTraceError
    from agent_core.trace.reader import parse_trace

    lines = ['{"type":"header","format":"chain-studio-trace","version":1,"meta":{}}',
             '{"type":"add","id":"msg_a-00000001","ts":"2026-01-01T00:00:00.000Z","value":{"role":"user","content":"hi"}}',
             '{"type":"add","dt":99999999999999999999999,"value":{"role":"user","content":"x"}}']
    with pytest.raises(MalformedTraceError, match=r"^<trace>:3:1: malformed add event"):
        parse_trace("\n".join(lines) + "\n")


def test_a_resumed_writer_numbers_new_calls_after_the_highest_recorded_one(tmp_path):
    steps = _edge_case_script()          # calls 0, 1 (two attempts), 2, 3, 5, 6
    path = tmp_path / "t.jsonl"
    with TraceWriter(path) as writer:
        assert writer.first_call == 0
        _play(writer, steps)
    with TraceWriter(path) as writer:
        assert writer.first_call == 7
        new_call = [s for s in steps if not hasattr(s, "role")][0]
        with pytest.raises(ValueError, match="numbers new calls from 7"):
            writer.call_attempt(new_call)           # a second call 0 would be filed as a retry of the first
    assert len(read_trace(path).calls) == 6


def test_the_stream_length_is_known_before_its_messages_are_built():
    from agent_core.core.paths import SAMPLE_TRACES

    trace = read_trace(SAMPLE_TRACES / "long_trimmed_fact.jsonl")
    n = trace.stream_length
    assert trace.__dict__.get("_pending_stream") is not None       # still rows: no Msg built to count them
    assert n == len(trace.stream) > 0
    assert trace.__dict__.get("_pending_stream") is None and trace.stream_length == n
