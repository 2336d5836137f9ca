"""Format detection and mapping of every accepted input into a Trace."""
from __future__ import annotations

import hashlib
import json

import pytest

from agent_core.core.errors import MalformedTraceError
from agent_core.core.msg import message_key
from agent_core.ingest.detect import (
    convert_legacy,
    convert_legacy_request,
    load_any,
    parse_any,
    split_conversations,
)
from agent_core.lint.scan import lint_payload
from agent_core.trace.reader import read_trace

SYS = {"role": "system", "content": "be brief"}
U1 = {"role": "user", "content": "weather in Paris?"}
CALL = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}
RES = {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}
A1 = {"role": "assistant", "content": "It is sunny."}
U2 = {"role": "user", "content": "thanks"}
A2 = {"role": "assistant", "content": "You're welcome."}


def _jsonl(rows) -> str:
    return "\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n"


def test_request_body_is_one_call():
    body = {"model": "gpt-4o", "messages": [SYS, U1], "tools": [{"type": "function", "function": {"name": "x"}}]}
    trace = parse_any(json.dumps(body))
    assert trace.format == "request-body" and len(trace.calls) == 1
    assert trace.calls[0].request == body
    assert [m.to_openai() for m in trace.stream] == [SYS, U1]
    assert trace.calls[0].stream_index == 2 and trace.calls[0].message_ids == [m.id for m in trace.stream]


def test_pasted_messages_object_is_a_request_body_but_a_record_with_more_keys_is_a_conversation():
    trace = parse_any(json.dumps({"messages": [U1, CALL, U2]}))
    assert trace.format == "request-body" and len(trace.calls) == 1
    assert trace.calls[0].request == {"messages": [U1, CALL, U2]}
    record = parse_any(json.dumps({"id": "x", "messages": [U1, A1, U2, A2]}))
    assert record.format == "conversations" and len(record.calls) == 2


def test_bare_messages_array_is_one_call_without_tools_info():
    trace = parse_any(json.dumps([SYS, U1, CALL, RES, A1]))
    assert trace.format == "messages" and len(trace.calls) == 1
    assert trace.calls[0].request == {"messages": [SYS, U1, CALL, RES, A1]}
    assert trace.meta["tools_recorded"] is False
    assert trace.stream[3].parent_id == trace.stream[2].id  # lineage: the result answers its call


def test_request_jsonl_builds_the_stream():
    calls = [[SYS, U1], [SYS, U1, CALL, RES], [SYS, U1, CALL, RES, A1, U2]]
    trace = parse_any(_jsonl({"model": "m", "messages": c} for c in calls), "log.jsonl")
    assert trace.format == "request-jsonl" and len(trace.calls) == 3
    assert [c.request["messages"] for c in trace.calls] == calls
    assert [m.to_openai() for m in trace.stream] == [SYS, U1, CALL, RES, A1, U2]
    assert [c.stream_index for c in trace.calls] == [2, 4, 6]
    ids = [m.id for m in trace.stream]
    assert trace.calls[2].message_ids == ids
    assert trace.calls[1].message_ids == ids[:4]
    assert len(set(ids)) == 6


def test_trimmed_log_maps_kept_messages():
    calls = [[SYS, U1, A1, U2], [SYS, U2, A2, U1]]  # the second call dropped U1/A1 then the user repeated U1
    trace = parse_any(_jsonl({"model": "m", "messages": c} for c in calls))
    keys = [message_key(m.to_openai()) for m in trace.stream]
    assert keys == [message_key(m) for m in (SYS, U1, A1, U2, A2, U1)]
    ids = [m.id for m in trace.stream]
    assert trace.calls[1].message_ids == [ids[0], ids[3], ids[4], ids[5]]
    assert trace.calls[1].stream_index == 6


def test_request_response_jsonl_with_last_reply():
    rows = [{"request": {"model": "m", "messages": [U1]}, "response": {"choices": [{"message": A1}]},
             "status": 200, "latency_ms": 12.5, "trace_id": "abc"},
            {"request": {"model": "m", "messages": [U1, A1, U2]}, "response": {"choices": [{"message": A2}]}}]
    trace = parse_any(_jsonl(rows))
    assert trace.format == "request-response-jsonl"
    assert trace.calls[0].status == 200 and trace.calls[0].latency_ms == 12.5
    assert trace.calls[1].reply == A2
    assert [m.to_openai() for m in trace.stream] == [U1, A1, U2, A2]
    assert any("trace_id (1x)" in w for w in trace.warnings)


def test_conversation_records_one_call_per_assistant_message():
    records = [{"task_id": 3, "trial": 0, "traj": [SYS, U1, CALL, RES, A1, U2]},
               {"task_id": 4, "trial": 1, "traj": [U1, A1]}]
    trace = parse_any(json.dumps(records), "tau.json")
    assert trace.format == "tau-bench" and len(trace.calls) == 3
    first = trace.calls[0]
    assert first.request == {"messages": [SYS, U1]} and first.response == {"choices": [{"message": CALL}]}
    assert trace.calls[1].request == {"messages": [SYS, U1, CALL, RES]}
    assert trace.calls[2].request == {"messages": [U1]} and trace.calls[2].stream_index == 7
    assert trace.meta["conversations"] == [
        {"name": "task 3 trial 0", "calls": [0, 2], "messages": [0, 6]},
        {"name": "task 4 trial 1", "calls": [2, 3], "messages": [6, 8]}]
    assert trace.stream[6].parent_id is None  # lineage does not cross conversations
    parts = split_conversations(trace)
    assert [len(p.calls) for p in parts] == [2, 1] and parts[1].calls[0].index == 0
    assert parts[1].calls[0].stream_index == 1 and len(parts[1].stream) == 2


@pytest.mark.parametrize("key", ["messages", "history", "conversation"])
def test_other_conversation_keys(key):
    trace = parse_any(json.dumps([{"id": "c1", key: [U1, A1, U2, A2]}]))
    assert len(trace.calls) == 2 and trace.meta["conversations"][0]["name"] == "c1"


def test_swe_agent_tool_call_ids_list():
    history = [{"role": "system", "content": "s", "agent": "main", "message_type": "system_prompt"},
               {"role": "user", "content": "fix it", "agent": "main", "message_type": "observation"},
               {**CALL, "content": "look", "thought": "look", "action": "ls", "agent": "main"},
               {"role": "tool", "content": "a.py", "tool_call_ids": ["call_1"], "agent": "main"},
               {"role": "assistant", "content": "done", "agent": "main"}]
    trace = parse_any(json.dumps({"history": history, "info": {}}), "x.traj")
    assert trace.format == "swe-agent" and len(trace.calls) == 2
    assert trace.calls[1].request["messages"][3] == {"role": "tool", "content": "a.py", "tool_call_id": "call_1"}
    assert lint_payload(trace.calls[1].request["messages"], check_tools=False) == []
    assert any("agent (5x)" in w for w in trace.warnings)


def test_toolbench_chains_and_legacy_conversion(real_traces):
    path = next((real_traces / "toolbench-chatgpt-function-call").rglob("10_ChatGPT_DFS_woFilter_w2.json"))
    data = json.loads(path.read_text())
    chains = data["answer_generation"]["train_messages"]
    trace = load_any(path)
    assert len(trace.calls) == len(chains)
    assert trace.calls[-1].request["messages"] == chains[-1][:-1]
    assert trace.calls[-1].reply == chains[-1][-1]
    assert trace.calls[0].request["functions"] == data["answer_generation"]["function"]
    converted, notes = convert_legacy(chains[-1])
    assert converted != chains[-1] and notes
    assert all(m.get("role") != "function" and "function_call" not in m for m in converted)
    body, _ = convert_legacy_request(trace.calls[-1].request)
    assert [f.rule for f in lint_payload(body["messages"], body["tools"])] == []


def test_convert_legacy_pairs_by_name_and_leaves_input_alone():
    legacy = [U1, {"role": "assistant", "content": None, "function_call": {"name": "a", "arguments": "{}"}},
              {"role": "function", "name": "a", "content": "1"}, A1]
    before = json.dumps(legacy)
    out, notes = convert_legacy(legacy)
    assert json.dumps(legacy) == before
    assert out[1]["tool_calls"][0]["id"] == "call_legacy_0" and out[2] == {
        "role": "tool", "tool_call_id": "call_legacy_0", "name": "a", "content": "1"}
    assert len(notes) == 2


def test_chain_studio_trace_is_delegated(sample_traces):
    path = sorted(sample_traces.glob("*.jsonl"))[0]
    assert load_any(path).calls[0].request == read_trace(path).calls[0].request
    assert load_any(path).format == "chain-studio"


@pytest.mark.parametrize("text,line,column", [
    ('{"messages": [1, 2,', 1, 20),
    ('[\n  {"role": "user",\n   "content": "x"\n  ,]', 4, 4),
    ('{"model": "m", "messages": []}\n{"model": "m", "messages": [}\n', 2, 29),
])
def test_invalid_json_names_line_and_column(text, line, column):
    with pytest.raises(MalformedTraceError) as caught:
        parse_any(text, "bad.json")
    assert (caught.value.path, caught.value.line, caught.value.column) == ("bad.json", line, column)
    assert str(caught.value).startswith(f"bad.json:{line}:{column}: invalid JSON")


@pytest.mark.parametrize("text", ["", "   \n", "42", '{"hello": 1}', '[1, 2, 3]', '"str"'])
def test_unrecognised_input(text):
    with pytest.raises(MalformedTraceError):
        parse_any(text, "x")


def test_not_utf8():
    with pytest.raises(MalformedTraceError) as caught:
        parse_any(b'[{"role": "user", "content": "a"}]\n\xff', "bin")
    assert (caught.value.line, caught.value.column) == (2, 1)


def test_deep_nesting_is_an_error_not_a_crash():
    with pytest.raises(MalformedTraceError, match="nested too deeply"):
        parse_any("[" * 200000 + "]" * 200000, "deep.json")
    deep_content = json.dumps([{"role": "user", "content": "x"}])[:-1] + ', {"role": "user", "content": ' + \
        "[" * 5000 + "]" * 5000 + "}]"
    try:
        trace = parse_any(deep_content, "d.json")
    except MalformedTraceError as err:
        assert "nested too deeply" in str(err)
    else:
        assert len(trace.calls) == 1


def test_files_are_never_modified(tmp_path, real_traces):
    files = [next(real_traces.rglob("*.traj")), next(real_traces.rglob("*.sample.json"))]
    digests = [hashlib.sha256(p.read_bytes()).hexdigest() for p in files]
    for p in files:
        load_any(p)
    assert [hashlib.sha256(p.read_bytes()).hexdigest() for p in files] == digests


def test_missing_file():
    with pytest.raises(MalformedTraceError, match="No such file"):
        load_any("/nonexistent/file.json")


def test_jsonl_skipped_lines_are_reported():
    text = _jsonl([{"model": "m", "messages": [U1]}, {"nothing": 1}, {"model": "m", "messages": [U1, A1, U2]}])
    trace = parse_any(text)
    assert len(trace.calls) == 2 and trace.warnings == ["line 2 holds neither a request body nor a conversation "
                                                        "and was skipped"]


def _values():
    from hypothesis import strategies as st
    keys = st.sampled_from(["role", "content", "messages", "traj", "history", "request", "response", "model",
                            "tool_calls", "tool_call_ids", "answer_generation", "train_messages", "type", "x"])
    return st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=4),
                        lambda c: st.lists(c, max_size=4) | st.dictionaries(keys, c, max_size=5), max_leaves=25)


def test_parse_any_raises_only_malformed_trace_error():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=300, deadline=None)
    @given(st.one_of(_values().map(json.dumps), st.lists(_values().map(json.dumps), max_size=3).map("\n".join),
                     st.binary(max_size=40)))
    def check(data):
        try:
            trace = parse_any(data, "fuzz")
        except MalformedTraceError as err:
            assert err.path == "fuzz" and "\n" not in str(err)
        else:
            assert all(c.index == n for n, c in enumerate(trace.calls))
            from agent_core.lint.scan import lint_trace
            lint_trace(trace)

    check()
