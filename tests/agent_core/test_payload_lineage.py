"""Lineage inferred from request bodies alone: identity, drops, edits, conversations, retries."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_core.ingest.alignment import DROP_POLICY, EDIT_POLICY
from agent_core.ingest.payload_log import (
    infer_lineage,
    split_conversations,
    trace_from_requests,
    traces_from_requests,
)
from agent_core.trace.reader import read_trace
from agent_core.trace.writer import write_trace

SYS = {"role": "system", "content": "You are a helpful assistant."}


def u(text):
    return {"role": "user", "content": text}


def a(text):
    return {"role": "assistant", "content": text}


def reply(message):
    return {"id": "chatcmpl-x", "object": "chat.completion", "choices": [
        {"index": 0, "message": {**message, "refusal": None}, "finish_reason": "stop"}]}


def body(*messages, **extra):
    return {"model": "gpt-4o-mini", "messages": list(messages), **extra}


def _bodies_of_ids(trace):
    table = trace.message_by_id()
    return [[table[i].to_openai() if i is not None else None for i in c.message_ids] for c in trace.calls]


def _assert_consistent(trace, tmp_path):
    """Every id resolves to exactly its payload message, in memory and after write + read."""
    assert _bodies_of_ids(trace) == [[m if isinstance(m, dict) and m else None for m in c.messages] for c in trace.calls]
    path = tmp_path / "roundtrip.jsonl"
    write_trace(trace, path)
    back = read_trace(path)
    assert [c.message_ids for c in back.calls] == [c.message_ids for c in trace.calls]
    assert [c.stream_index for c in back.calls] == [c.stream_index for c in trace.calls]
    assert [m.to_openai() for m in back.stream] == [m.to_openai() for m in trace.stream]
    assert [c.request for c in back.calls] == [c.request for c in trace.calls]
    return back


def test_growing_history_with_replies_rebuilds_the_stream(tmp_path):
    bodies = [body(SYS, u("hi")), body(SYS, u("hi"), a("hello"), u("weather?")),
              body(SYS, u("hi"), a("hello"), u("weather?"), a("sunny"), u("thanks"))]
    responses = [reply(a("hello")), reply(a("sunny")), reply(a("you're welcome"))]
    trace = trace_from_requests(bodies, responses)
    assert [m.to_openai() for m in trace.stream] == [SYS, u("hi"), a("hello"), u("weather?"), a("sunny"),
                                                     u("thanks"), {**a("you're welcome"), "refusal": None}]
    assert [c.stream_index for c in trace.calls] == [2, 4, 6]
    assert trace.events == [] and trace.warnings == []
    lineage = infer_lineage(bodies, responses)
    assert [c.matches for c in lineage.calls] == [
        ["new", "new"], ["exact", "exact", "reply", "new"], ["exact"] * 4 + ["reply", "new"]]
    # parents follow the function-calling flow
    by_id = {m.id: m for m in trace.stream}
    assert by_id[trace.stream[3].parent_id].content == "hello"
    _assert_consistent(trace, tmp_path)


def test_trimmed_payloads_mark_the_dropped_head(tmp_path):
    turns = [u(f"turn {i}") for i in range(6)]
    answers = [a(f"answer {i}") for i in range(6)]
    history, bodies = [], []
    for t, ans in zip(turns, answers):
        history += [t]
        bodies.append(body(SYS, *history[-3:]))      # the app keeps the system prompt + last 3 messages
        history += [ans]
    trace = trace_from_requests(bodies, [reply(x) for x in answers])
    lineage = infer_lineage(bodies, [reply(x) for x in answers])
    texts = {m.id: m.content for m in lineage.stream}
    assert [[texts[d] for d in c.dropped] for c in lineage.calls] == [
        [], [], ["turn 0", "answer 0"], ["turn 1", "answer 1"], ["turn 2", "answer 2"], ["turn 3", "answer 3"]]
    assert [[texts[n] for n in c.new] for c in lineage.calls] == [
        [SYS["content"], "turn 0"], ["answer 0", "turn 1"], ["answer 1", "turn 2"], ["answer 2", "turn 3"],
        ["answer 3", "turn 4"], ["answer 4", "turn 5"]]
    assert all(e.event.policy == DROP_POLICY for e in trace.events)
    assert len(trace.stream) == 1 + 12 and len(lineage.conversations) == 1
    back = _assert_consistent(trace, tmp_path)
    assert [e.event.removed for e in back.events] == [e.event.removed for e in trace.events]


def test_reformatted_and_rewritten_messages_get_versions(tmp_path):
    tool_call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"成都\"}"}}
    asked = {"role": "assistant", "content": None, "tool_calls": [tool_call]}
    result = {"role": "tool", "tool_call_id": "call_1", "content": "{\"city\": \"成都\", \"temperature_c\": 18, "
                                                                       "\"forecast\": \"rain later in the day\"}"}
    b0 = body({"role": "system", "content": "Today is 2026-12-01. Be brief."}, u("weather in Chengdu?"), asked, result)
    # key order, whitespace, None-vs-missing content and the arguments' spacing change; the tool result is
    # truncated by the app; the system prompt gets a new date
    asked_again = {"tool_calls": [{**tool_call, "function": {"name": "get_weather", "arguments": "{\"city\":\"成都\"}"}}],
                   "role": "assistant"}
    truncated = {"role": "tool", "tool_call_id": "call_1", "content": "{\"city\": \"成都\", \"temperature_c\": 18"}
    b1 = body({"role": "system", "content": "Today is 2026-12-02. Be brief."}, u("weather in  Chengdu? "),
              asked_again, truncated, a("18°C"), u("and tomorrow?"))
    lineage = infer_lineage([b0, b1])
    second = lineage.calls[1]
    assert second.matches == ["rewritten", "reformatted", "reformatted", "rewritten", "new", "new"]
    assert [(e.position, e.kind) for e in second.edits] == [(0, "rewritten"), (1, "reformatted"),
                                                           (2, "reformatted"), (3, "rewritten")]
    first_ids = lineage.calls[0].message_ids
    assert [e.original for e in second.edits] == first_ids
    assert second.dropped == []
    assert [lineage.versions[e.version].to_openai() for e in second.edits] == b1["messages"][:4]
    trace = trace_from_requests([b0, b1])
    (event,) = trace.events
    assert event.event.policy == EDIT_POLICY and event.event.removed == trace.calls[0].message_ids
    assert event.event.added == trace.calls[1].message_ids[:4]
    _assert_consistent(trace, tmp_path)


def test_a_new_turn_is_not_an_edit_of_a_dropped_one():
    # an app that sends only the current turn: the old turn is dropped, the new one is new
    lineage = infer_lineage([body(SYS, u("what is the capital of France?")), body(SYS, u("tell me a joke"))],
                            [reply(a("Paris.")), None], sessions=["s", "s"])
    assert lineage.calls[1].matches == ["exact", "new"]
    texts = {m.id: m.content for m in lineage.stream}
    # the old question and the reply the app never sent back, which joins the stream as it came
    assert [texts[d] for d in lineage.calls[1].dropped] == ["what is the capital of France?", "Paris."]
    assert lineage.calls[1].edits == []
    assert [m.content for m in lineage.stream] == [SYS["content"], "what is the capital of France?", "Paris.",
                                                   "tell me a joke"]


def test_repeated_bodies_keep_their_own_ids():
    b0 = body(SYS, u("ok"))
    b1 = body(SYS, u("ok"), a("fine"), u("ok"))
    b2 = body(SYS, u("ok"), a("fine"), u("ok"), a("fine"), u("ok"))
    lineage = infer_lineage([b0, b1, b2])
    ids = lineage.calls[2].message_ids
    assert len(set(ids)) == 6 and ids[:4] == lineage.calls[1].message_ids
    assert lineage.calls[2].matches == ["exact"] * 4 + ["new", "new"]


def test_two_interleaved_conversations_split_by_continuity(tmp_path):
    x = [body(SYS, u("Plan a trip to Paris")), body(SYS, u("Plan a trip to Paris"), a("Day 1: Louvre"), u("Day 2?"))]
    y = [body(SYS, u("Fix my SQL query")), body(SYS, u("Fix my SQL query"), a("Add an index"), u("Which column?"))]
    x.append(body(*x[1]["messages"], a("Orsay"), u("Day 3?")))
    y.append(body(*y[1]["messages"], a("user_id"), u("Thanks")))
    bodies = [x[0], y[0], x[1], y[1], x[2], y[2]]
    assert split_conversations(bodies) == [[0, 2, 4], [1, 3, 5]]
    lineage = infer_lineage(bodies)
    assert all(c.dropped == [] for c in lineage.calls)
    # the shared system prompt is one message per conversation
    assert lineage.calls[0].message_ids[0] != lineage.calls[1].message_ids[0]
    trace = trace_from_requests(bodies)
    assert trace.meta["conversation_calls"] == [[0, 2, 4], [1, 3, 5]]
    assert any("2 conversations" in w for w in trace.warnings)
    assert _bodies_of_ids(trace) == [c.messages for c in trace.calls]
    per = traces_from_requests(bodies)
    assert [t.meta["requests"] for t in per] == [[0, 2, 4], [1, 3, 5]]
    assert [len(t.stream) for t in per] == [6, 6] and all(t.events == [] for t in per)
    for t in per:
        _assert_consistent(t, tmp_path)
    # labels win over continuity
    assert infer_lineage(bodies, sessions=["a"] * 6).conversations == [[0, 1, 2, 3, 4, 5]]


def test_retry_after_failure_is_an_attempt_of_the_same_call():
    b0 = body(SYS, u("hi"))
    trace = trace_from_requests([b0, b0, body(SYS, u("hi"), a("hello"), u("bye"))],
                                [{"error": {"message": "server error"}}, reply(a("hello")), reply(a("bye!"))],
                                statuses=[500, 200, 200])
    assert len(trace.calls) == 2
    first = trace.calls[0]
    assert [(x.attempt, x.status) for x in first.attempts] == [(1, 500), (2, 200)]
    assert first.status == 200 and first.error is None and first.reply["content"] == "hello"
    assert trace.calls[1].messages[2] == a("hello") and trace.events == []


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
                    max_leaves=12)
MESSAGE = st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant", "tool", 3]),
                                 "content": st.one_of(st.none(), st.sampled_from(["a", " a", "b", ""]), JSON)})
BODY = st.one_of(JSON, st.fixed_dictionaries({"messages": st.lists(st.one_of(MESSAGE, JSON), max_size=6)}))


@settings(max_examples=150, deadline=None)
@given(st.lists(BODY, max_size=6), st.lists(st.one_of(JSON, st.just(reply(a("a")))), max_size=6))
def test_any_json_never_raises_and_ids_stay_exact(bodies, responses):
    trace = trace_from_requests(bodies, responses)
    assert len(trace.calls) <= len(bodies)
    table = trace.message_by_id()
    for c in trace.calls:
        for i, m in zip(c.message_ids, c.messages):
            assert (i is None) == (not isinstance(m, dict) or m == {})
            if i is not None:
                assert json.dumps(table[i].to_openai()) == json.dumps(m)
    with tempfile.TemporaryDirectory() as tmp:
        write_trace(trace, Path(tmp) / "t.jsonl")
        back = read_trace(Path(tmp) / "t.jsonl")
    assert [c.request for c in back.calls] == [c.request for c in trace.calls]


def test_toolbench_train_message_chains(real_traces, tmp_path):
    """ToolBench keeps one chain per model step (mostly growing prefixes); each is a payload + its reply."""
    files = sorted(real_traces.glob("toolbench*/**/*.json"))
    assert files
    chains_seen = files_with_chains = dropped = edited = 0
    for f in files:
        chains = json.loads(f.read_text(encoding="utf-8")).get("answer_generation", {}).get("train_messages") or []
        if not chains:
            continue
        files_with_chains += 1
        chains_seen += len(chains)
        bodies = [{"model": "gpt-3.5-turbo-16k", "messages": c[:-1]} for c in chains]
        responses = [{"choices": [{"index": 0, "message": c[-1]}]} for c in chains]
        lineage = infer_lineage(bodies, responses)
        assert lineage.conversations == [list(range(len(chains)))], f
        assert all(c.matches[: len(chains[0]) - 2].count("exact") == len(chains[0]) - 2 for c in lineage.calls[1:])
        # every reply was sent back on the next step
        assert all("reply" in c.matches for c in lineage.calls[1:]), f
        trace = trace_from_requests(bodies, responses, source=str(f))
        # the final chain (payload + reply) is the tail of the stream, message for message
        last = trace.calls[-1]
        table = trace.message_by_id()
        assert [table[i].to_openai() for i in last.message_ids] == chains[-1][:-1]
        assert trace.stream[-1].to_openai() == chains[-1][-1]
        _assert_consistent(trace, tmp_path)
        dropped += sum(len(c.dropped) for c in lineage.calls)
        edited += sum(len(c.edits) for c in lineage.calls)
    assert files_with_chains == 13
    print(f"toolbench: {files_with_chains} files, {chains_seen} payloads, {dropped} inferred drops, {edited} edits")


def test_an_edited_system_prompt_before_kept_messages_round_trips(tmp_path):
    b0 = body({"role": "system", "content": "Today is 2026-12-01."}, u("hi"))
    b1 = body({"role": "system", "content": "Today is 2026-12-02."}, u("hi"), a("hello"), u("more"))
    trace = trace_from_requests([b0, b1], [reply(a("hello")), None])
    assert infer_lineage([b0, b1], [reply(a("hello")), None]).calls[1].matches == ["rewritten", "exact", "reply", "new"]
    assert trace.calls[1].message_ids[1] == trace.calls[0].message_ids[1]
    _assert_consistent(trace, tmp_path)


def test_deeply_nested_messages_are_left_untracked_not_fatal(tmp_path):
    deep = json.loads('{"role": "user", "content": ' + "[" * 900 + "]" * 900 + "}")
    bodies = [body(SYS, deep, u("ok")), body(SYS, deep, u("ok"), a("fine"), u("next"))]
    trace = trace_from_requests(bodies, [{"choices": [{"message": deep}]}, reply(a("done"))])
    assert [[i is not None for i in c.message_ids] for c in trace.calls] == [[True, False, True],
                                                                             [True, False, True, True, True]]
    assert trace.warnings[0] == "request 0: messages[1] is nested more than 64 levels deep; it has no id"
    assert "a reply nested more than 64 levels deep was left out of the stream" in trace.warnings
    assert trace.calls[1].request == bodies[1]


def test_times_and_latencies_are_kept():
    bodies = [body(SYS, u("hi")), body(SYS, u("hi"), a("hello"), u("bye"))]
    trace = trace_from_requests(bodies, [reply(a("hello")), None], started_at=["2026-12-02T10:00:00.000Z", "bad"],
                                latency_ms=[12.5, None])
    assert [(c.started_at, c.latency_ms) for c in trace.calls] == [("2026-12-02T10:00:00.000Z", 12.5), ("bad", None)]
    assert trace.stream[1].timestamp.isoformat() == "2026-12-02T10:00:00+00:00"


def _script(system, turns, replies):
    """The bodies one run of a chat script sends (each reply sent back) and the responses it got."""
    history, bodies = [system], []
    for turn, answer in zip(turns, replies):
        history.append(u(turn))
        bodies.append(body(*history))
        history.append(a(answer))
    return bodies, [reply(a(x)) for x in replies]


def test_the_same_script_run_again_is_a_new_conversation():
    bodies, responses = _script(SYS, ["hi", "weather?", "thanks"], ["hello", "sunny", "welcome"])
    lineage = infer_lineage(bodies * 3, responses * 3)
    assert lineage.conversations == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert all(c.dropped == [] and c.edits == [] for c in lineage.calls) and lineage.warnings == []
    assert [c.reason for c in lineage.calls[:4]] == [
        "new: first request",
        "extends conversation 1's last payload (2 of 2 messages kept, its reply sent back)",
        "extends conversation 1's last payload (4 of 4 messages kept, its reply sent back)",
        "new: opening matches conversation 1 but lacks its later messages (2 of 6)"]


def test_turn_taking_users_and_distinct_system_prompts_stay_apart():
    alice, ra = _script(SYS, ["I'm Alice", "what is my name?", "bye"], ["Hi Alice", "Alice", "bye"])
    bob, rb = _script(SYS, ["I'm Bob", "what is my name?", "bye"], ["Hi Bob", "Bob", "bye"])
    order = [x for pair in zip(zip(alice, ra), zip(bob, rb)) for x in pair]
    lineage = infer_lineage([b for b, _ in order], [r for _, r in order])
    assert lineage.conversations == [[0, 2, 4], [1, 3, 5]]
    assert all(c.dropped == [] for c in lineage.calls) and lineage.warnings == []
    # identical turns and identical replies: only the system prompt tells the threads apart
    runs = [_script({"role": "system", "content": f"You are agent {n}."}, ["go", "again", "stop"], ["ok"] * 3)
            for n in range(5)]
    bodies = [run[0][turn] for turn in range(3) for run in runs]
    responses = [run[1][turn] for turn in range(3) for run in runs]
    lineage = infer_lineage(bodies, responses)
    assert lineage.conversations == [[n, n + 5, n + 10] for n in range(5)]
    assert all(c.dropped == [] and c.edits == [] for c in lineage.calls) and lineage.warnings == []


def test_an_ambiguous_choice_is_a_warning_naming_both_candidates():
    # two conversations that differ only in their first turn; the next payload drops it: either could go on
    x = body(SYS, u("alpha"), a("ok"), u("go on"))
    y = body(SYS, u("beta"), a("ok"), u("go on"))
    nxt = body(SYS, u("go on"), a("done"), u("next"))
    lineage = infer_lineage([x, y, nxt], [reply(a("done")), reply(a("done")), None])
    assert lineage.conversations == [[0, 2], [1]]
    (warning,) = lineage.warnings
    assert warning.startswith("ambiguous: request 2 extends conversation 1 and conversation 2 equally")
    assert warning.endswith("filed under conversation 1") and lineage.calls[2].reason == warning
    # the drop is inferred, with its evidence
    texts = {m.id: m.content for m in lineage.stream}
    assert [texts[d] for d in lineage.calls[2].dropped] == ["alpha", "ok"]
    trace = trace_from_requests([x, y, nxt], [reply(a("done")), reply(a("done")), None])
    assert warning in trace.warnings
    assert all("(inferred from payloads)" in e.event.reason for e in trace.events)


def test_a_question_asked_again_after_a_trim_stays_in_its_conversation():
    """[S, U1, A1, U2] then [S, U2, A2, U1]: U1/A1 trimmed, the user asks U1 again. One conversation, with A1's
    drop inferred; an in-order match that took the repeated U1 first used to lose U2 and start a second one."""
    s, u1, a1 = {"role": "system", "content": "be brief"}, {"role": "user", "content": "weather in Paris?"}, \
        {"role": "assistant", "content": "Sunny"}
    u2, a2 = {"role": "user", "content": "thanks"}, {"role": "assistant", "content": "welcome"}
    lin = infer_lineage([{"messages": [s, u1, a1, u2]}, {"messages": [s, u2, a2, u1]}])
    assert len(lin.conversations) == 1 and not lin.warnings
    assert lin.calls[1].reason == "extends conversation 1's last payload (2 of 4 messages kept)"
    assert lin.calls[1].dropped == [lin.calls[0].message_ids[2]]      # A1; the same U1 body is matched as moved
