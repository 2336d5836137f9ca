"""Replay's fast paths equal replay by its definition.

Replay keeps the memory's dicts, ids and token total in step instead of
rebuilding them per call, runs token-budget's rule inside the memory
(token-budget's ``incremental()`` trimmer), and counts recorded payloads once per
trace. Here a reference replay written the obvious way (a plain list, ``policy.apply``
after every add, every payload converted and counted whole) must give the
same payloads, drops, reasons, counts and equality flags, for every policy,
for policies that trim in odd ways, on random streams with clears and
several conversations, on long synthetic traces and on the real traces.
"""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from replay_streams import traces

from agent_core.core.errors import MalformedTraceError
from agent_core.core.msg import Msg, message_key, openai_dict
from agent_core.ingest.detect import load_any
from agent_core.replay.engine import (
    _same_body,
    _same_json,
    call_position,
    chat_calls,
    replay,
)
from agent_core.trace.events import MemoryEvent
from agent_core.trace.model import Call, StreamEvent, Trace
from agent_core.trace.reader import read_trace
from agent_core.trace.synthetic import synthetic_trace
from agent_core.trace.tokens import counter_for
from agent_core.trace.writer import write_trace
from agent_core.trim.base import TrimResult
from agent_core.trim.budget import TokenBudget
from agent_core.trim.compose import Compose
from agent_core.trim.langchain import LangchainTrimLast
from agent_core.trim.message_tokens import MessageTokens
from agent_core.trim.summary import SummaryWindow
from agent_core.trim.window import KeepAll, MaxMessages, NaiveDropOldest, SlidingWindow

# --- the reference: replay by its definition --------------------------------------------

def reference_replay(trace: Trace, policy) -> tuple[list[dict], list[tuple]]:
    """Per call (in call order) what the policy's memory held, and every drop, computed naively."""
    stream = trace.stream
    calls = sorted(chat_calls(trace), key=lambda c: (call_position(c, len(stream)), c.index))
    clears = [e.after_add for e in trace.events if e.event.type == "clear"]
    starts = {int(r["messages"][0]): int(r["calls"][0]) for r in trace.meta.get("conversations") or ()
              if r["messages"][0] > 0}
    memory: list[Msg] = []
    drops: list[tuple] = []
    out: list[dict] = []

    def snapshot(c: Call) -> None:
        counter = counter_for(c.model)
        dicts = [m.to_openai() for m in memory]
        out.append({"call": c.index, "ids": [m.id for m in memory], "messages": [message_key(d) for d in dicts],
                    "tokens": counter.count_payload(dicts, c.tools),
                    "recorded_tokens": counter.count_payload(c.messages, c.tools),
                    "same": [message_key(d) for d in dicts] == [message_key(d) for d in c.messages]})

    for pos in range(len(stream) + 1):
        here = [c for c in calls if call_position(c, len(stream)) == pos]
        if pos in starts:
            for c in [c for c in here if c.index < starts[pos]]:
                snapshot(c)
            here = [c for c in here if c.index >= starts[pos]]
            memory = []
        for _ in range(clears.count(pos)):
            drops += [(m.id, m.role, pos, "clear", "the user cleared the conversation")
                      for m in memory if m.role != "system"]
            memory = [m for m in memory if m.role == "system"]
        for c in here:
            snapshot(c)
        if pos < len(stream):
            memory.append(stream[pos])
            result = policy.apply(memory)
            if result.changed:
                memory = list(result.messages)
                drops += [(m.id, m.role, pos + 1, policy.name, result.reason) for m in result.removed]
    out.sort(key=lambda r: r["call"])
    return out, drops


def _fast(trace: Trace, policy) -> tuple[list[dict], list[tuple]]:
    result = replay(trace, policy, lint_calls=False)
    out = [{"call": c.call, "ids": c.ids, "messages": [message_key(d) for d in c.messages], "tokens": c.tokens,
            "recorded_tokens": c.recorded_tokens, "same": c.same} for c in result.calls]
    drops = [(d.msg_id, d.role, d.after_add, d.policy, d.reason) for d in result.drops]
    per_call = [d for c in sorted(result.calls, key=lambda c: c.position) for d in c.dropped]
    assert per_call == result.drops[:len(per_call)]       # per-call drops partition the drop log
    return out, drops


def _plain(value):
    """Summary ids are minted afresh by each run: compare them as one placeholder."""
    if isinstance(value, str):
        return "summary" if value.startswith("summary_") else value
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def assert_equal_to_reference(trace: Trace, make) -> None:
    want, want_drops = reference_replay(trace, make())
    got, got_drops = _fast(trace, make())
    assert _plain(got_drops) == _plain(want_drops)
    for g, w in zip(got, want, strict=True):
        assert _plain(g) == _plain(w), f"call {w['call']}"


# --- policies that trim in odd ways (the memory's general path) -------------------------

class _Reverses:
    """Drops the oldest non-system message and reverses the rest: kept is not memory minus removed."""

    name = "reverses"

    def params(self) -> dict:
        return {}

    def apply(self, messages):
        if len(messages) <= 4:
            return TrimResult(list(messages))
        return TrimResult([messages[0]] + list(messages[2:])[::-1], [messages[1]], "reversed")


class _RemovesOutOfOrder:
    """Drops the two oldest after the first message, reporting them newest first."""

    name = "out-of-order"

    def params(self) -> dict:
        return {}

    def apply(self, messages):
        if len(messages) <= 5:
            return TrimResult(list(messages))
        return TrimResult([messages[0]] + list(messages[3:]), [messages[2], messages[1]], "out of order")


class _CutsInPlace:
    """Deletes from the list it is given and returns that very list."""

    name = "in-place"

    def params(self) -> dict:
        return {}

    def apply(self, messages):
        if len(messages) <= 3:
            return TrimResult(list(messages))
        gone = messages[1]
        del messages[1]
        return TrimResult(messages, [gone], "in place")


class _Notes:
    """Replaces the oldest non-system message with a note (a message the stream never had)."""

    name = "notes"

    def params(self) -> dict:
        return {}

    def apply(self, messages):
        if len(messages) <= 4:
            return TrimResult(list(messages))
        note = Msg(role="system", content=f"note on {messages[1].id}", id=f"note-{messages[1].id}")
        return TrimResult([messages[0], note] + list(messages[2:]), [messages[1]], "noted")


class _ViaApply(TokenBudget):
    """Token-budget through ``apply`` (a subclass, so replay does not run the rule inside the memory)."""


class _WalkOnly(TokenBudget):
    """Token-budget by its definition only."""

    def apply(self, messages):
        return self._walk(messages)


POLICIES = [
    KeepAll, lambda: MaxMessages(5), lambda: NaiveDropOldest(4), lambda: SlidingWindow(2), lambda: SummaryWindow(1),
    lambda: TokenBudget(150, 10), lambda: TokenBudget(60, 0), lambda: _ViaApply(150, 10),
    lambda: LangchainTrimLast(120), lambda: Compose(MaxMessages(9), TokenBudget(200, 0)),
    lambda: LangchainTrimLast(150, start_on="human"), lambda: LangchainTrimLast(90, include_system=True),
    lambda: LangchainTrimLast(4, start_on="human,tool", include_system=True, token_counter="len"),
    _Reverses, _RemovesOutOfOrder, _CutsInPlace, _Notes,
]


def _clear(after_add: int) -> StreamEvent:
    return StreamEvent(after_add=after_add,
                       event=MemoryEvent(type="clear", policy="clear", removed=[], reason="/clear"))


@st.composite
def busy_traces(draw) -> Trace:
    """A random stream with /clear events, a mid-stream system message, an orphan result,
    sometimes a second conversation, and calls of two encodings."""
    trace = draw(traces())
    stream = trace.stream
    if draw(st.booleans()):
        at = draw(st.integers(0, len(stream)))
        stream.insert(at, Msg(role="system", content="(a system message in the middle)"))
    if draw(st.booleans()):
        at = draw(st.integers(0, len(stream)))
        stream.insert(at, Msg(role="tool", content="late", tool_call_id="call_nobody"))
    # each call sent the stream up to a random point, with one of two encodings' models
    points = sorted(draw(st.lists(st.integers(0, len(stream)), min_size=1, max_size=len(trace.calls) + 2)))
    trace.calls = [Call(index=i, request={"model": draw(st.sampled_from(["gpt-4o", "gpt-4"])),
                                          "messages": [openai_dict(m) for m in stream[:k]]},
                        stream_index=k, message_ids=[m.id for m in stream[:k]]) for i, k in enumerate(points)]
    for after in draw(st.lists(st.integers(0, len(stream)), max_size=3)):
        trace.events.append(_clear(after))
    if len(stream) > 2 and draw(st.booleans()):
        s = draw(st.integers(1, len(stream) - 1))
        first = next((c.index for c in trace.calls if c.stream_index > s), len(trace.calls))
        trace.meta["conversations"] = [{"messages": [0, s], "calls": [0, first]},
                                       {"messages": [s, len(stream)], "calls": [first, len(trace.calls)]}]
    return trace


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=busy_traces(), which=st.integers(0, len(POLICIES) - 1))
def test_replay_equals_the_reference_on_random_streams(trace, which):
    assert_equal_to_reference(trace, POLICIES[which])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=busy_traces(), max_tokens=st.integers(20, 700), reserve=st.integers(0, 15))
def test_token_budget_inside_the_memory_equals_apply_and_the_definition(trace, max_tokens, reserve):
    fast = replay(trace, TokenBudget(max_tokens + reserve, reserve))
    for other in (_ViaApply(max_tokens + reserve, reserve), _WalkOnly(max_tokens + reserve, reserve)):
        slow = replay(trace, other)
        assert [(c.ids, c.tokens, c.recorded_tokens, c.same, c.findings) for c in fast.calls] == \
            [(c.ids, c.tokens, c.recorded_tokens, c.same, c.findings) for c in slow.calls]
        assert [d.export() for d in fast.drops] == [d.export() for d in slow.drops]


def test_the_policy_ends_in_the_state_apply_would_leave():
    trace = synthetic_trace(120)
    inside, outside = TokenBudget(900, 0), _ViaApply(900, 0)
    replay(trace, inside)
    replay(trace, outside)
    assert [m.id for m in inside._last] == [m.id for m in outside._last]
    assert (inside._last_total, inside._last_groups) == (outside._last_total, outside._last_groups)
    # and it goes on live from there exactly as the other does
    nxt = Msg(role="user", content="再来一次 " * 50)
    a, b = inside.apply(inside._last + [nxt]), outside.apply(outside._last + [nxt])
    assert [m.id for m in a.messages] == [m.id for m in b.messages] and a.reason == b.reason


@pytest.mark.parametrize("which", range(len(POLICIES)))
def test_every_policy_equals_the_reference_on_a_synthetic_trace(which):
    trace = synthetic_trace(80)
    trace.events.append(_clear(90))
    assert_equal_to_reference(trace, POLICIES[which])


@pytest.mark.parametrize("budget", [300, 4000, 16000])
def test_long_synthetic_trace_equals_the_reference(budget):
    trace = synthetic_trace(300)
    trace.events.append(_clear(333))
    assert_equal_to_reference(trace, lambda: TokenBudget(budget, 0, model="gpt-4o"))
    assert_equal_to_reference(trace, lambda: MaxMessages(40))


def test_a_trace_read_from_a_file_equals_the_reference(tmp_path, sample_traces):
    """Calls read from a file keep payloads as runs: recorded counts resume through ``payload_tail``."""
    trace = synthetic_trace(150)
    trace.events.append(_clear(170))
    write_trace(trace, tmp_path / "t.jsonl")
    loaded = read_trace(tmp_path / "t.jsonl")
    assert all(c.payload is not None for c in loaded.calls)
    for make in (lambda: TokenBudget(1200, 0), lambda: MaxMessages(7), KeepAll):
        assert_equal_to_reference(loaded, make)
    for path in sorted(sample_traces.glob("*.jsonl")):
        sample = read_trace(path)
        for make in (lambda: TokenBudget(900, 0), KeepAll):
            assert_equal_to_reference(sample, make)
    # a recorded payload that stops matching (memory cleared, the log went on) is seen, and later ones too
    loaded.events.append(_clear(60))
    flags = [c.same for c in replay(loaded, KeepAll(), lint_calls=False).calls]
    assert flags[:20] == [True] * 20 and not any(flags[40:])
    assert_equal_to_reference(loaded, KeepAll)


def test_real_traces_equal_the_reference(real_traces):
    files = sorted(p for p in real_traces.rglob("*") if p.suffix in (".json", ".traj") and p.is_file())
    assert len(files) >= 20
    for path in files:
        try:
            trace = load_any(path)
        except MalformedTraceError as err:  # a ToolBench answer file with no valid chain imports no call
            assert "no train_messages" in str(err), path
            continue
        model = next((c.model for c in chat_calls(trace) if c.model), None)
        for make in (lambda m=model: TokenBudget(1500, model=m), lambda: MaxMessages(6), lambda: SlidingWindow(1)):
            assert_equal_to_reference(trace, make)


# --- caches and comparisons ------------------------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.0, -0.0, 1.0, 1.5, float("nan")])
    | st.sampled_from(["", "a", "天气", "1"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "role"]), inner,
                                                                 max_size=3),
    max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(a=_json, b=_json)
def test_body_comparison_is_the_wire_comparison(a, b):
    """``_same_body`` says what ``message_key`` equality says; ``_same_json`` never says equal wrongly."""
    wire = message_key(a) == message_key(b)
    assert _same_body(a, b) == wire
    assert not _same_json(a, b) or wire
    assert _same_json(a, json.loads(json.dumps(a))) or "NaN" in json.dumps(a)



def test_each_message_is_converted_once_and_the_dict_equals_to_openai():
    m = Msg.from_openai({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"城市\": \"北京\"}"}}]})
    d = openai_dict(m)
    assert openai_dict(m) is d and json.dumps(d) == json.dumps(m.to_openai())
    assert m == Msg.from_openai(m.to_openai(), id=m.id, timestamp=m.timestamp)   # not a field: eq unchanged
    for model in ("gpt-4o", "gpt-4"):
        mt = MessageTokens(model)
        assert mt.tokens(m) == counter_for(model).count_message(m.to_openai())
        assert MessageTokens(model).tokens(m) == mt.tokens(m)


def test_recorded_tokens_use_each_calls_own_encoding():
    """Calls alternate gpt-4o (o200k) and gpt-4 (cl100k): a count never resumes across encodings."""
    trace = synthetic_trace(40)
    for c in trace.calls:
        c.request["model"] = "gpt-4" if c.index % 2 else "gpt-4o"
    last = trace.calls[-1]
    assert counter_for("gpt-4").count_payload(last.messages) != counter_for("gpt-4o").count_payload(last.messages)
    for policy in (KeepAll(), TokenBudget(2000, 0)):
        result = replay(trace, policy, lint_calls=False)
        for rc, c in zip(result.calls, trace.calls):
            assert rc.recorded_tokens == counter_for(c.model).count_payload(c.messages, c.tools), c.index
    keep = replay(trace, KeepAll(), lint_calls=False)
    assert all(rc.tokens == rc.recorded_tokens and rc.same for rc in keep.calls)


def test_recorded_payload_is_read_from_the_call_when_asked():
    trace = synthetic_trace(30)
    result = replay(trace, TokenBudget(600, 0))
    rc = result.calls[-1]
    c = trace.calls[-1]
    assert rc.recorded_messages == c.messages and rc.recorded_ids == c.message_ids
    assert not rc.same and rc.diff.dropped and set(rc.diff.kept) <= set(c.message_ids)


def test_recorded_findings_of_a_split_conversation_are_its_own():
    """split_conversations copies meta; the recorded-findings cache of the whole trace must not leak in."""
    from agent_core.ingest.detect import split_conversations
    from agent_core.replay.findings import recorded_findings

    trace = synthetic_trace(10)
    broken = trace.calls[7]
    broken.request["messages"] = broken.request["messages"] + [
        {"role": "tool", "tool_call_id": "call_nobody", "content": "x"}]
    broken.message_ids = broken.message_ids + [None]
    cut = trace.calls[5].stream_index
    trace.meta["conversations"] = [{"name": "a", "calls": [0, 5], "messages": [0, cut]},
                                   {"name": "b", "calls": [5, 10], "messages": [cut, len(trace.stream)]}]
    whole = recorded_findings(trace)
    assert "unknown-tool-call-id" in [f.rule for f in whole[7]]
    second = split_conversations(trace)[1]
    mine = recorded_findings(second)
    assert "unknown-tool-call-id" in [f.rule for f in mine[2]]
    assert all("unknown-tool-call-id" not in [f.rule for f in v] for k, v in mine.items() if k != 2)
