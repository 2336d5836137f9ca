"""Retention follows a replayed window by the memory's own record of what left and came (``Memory.changes``).

The reference is the matrix of full scans (every view read whole, no tail, no delta) and, for the record
itself, the multiset of each payload's bodies: the payload before, minus what left, plus what came, is the
payload (by identity). The cost test counts bodies read, not seconds.
"""
from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from agent_core.core.paths import SAMPLE_TRACES
from agent_core.replay.engine import policy_for_trace, replay
from agent_core.replay.probes import probe_from_text, propose_probes, replay_views, retention
from agent_core.trace.reader import read_trace
from agent_core.trace.synthetic import synthetic_trace

POLICIES = [
    ("keep-all", {}), ("max-messages", {"max_messages": 7}), ("naive-drop-oldest", {"max_messages": 5}),
    ("sliding-window", {"turns": 2}), ("token-budget", {"max_tokens": 900}), ("summary-window", {"keep_turns": 2}),
    ("langchain-trim-last", {"max_tokens": 900}), ("anthropic-clear-tool-uses", {"trigger": 400, "keep": 1}),
    ("openai-truncation-auto", {"context_window": 2000}),
    ("compose", {"policies": "sliding-window:turns=3+token-budget:max_tokens=1200"}),
]


def _traces():
    yield "synthetic-200", synthetic_trace(200)
    for path in sorted(SAMPLE_TRACES.glob("*.jsonl")):
        trace = read_trace(path)
        if trace.stream:
            yield path.name, trace


def _replayed(trace, name, params):
    return replay(trace, policy_for_trace(name, params, trace), lint_calls=False)


@pytest.mark.parametrize("name,params", POLICIES, ids=[p[0] for p in POLICIES])
def test_each_snapshot_is_the_one_before_minus_what_left_plus_what_came(name, params):
    checked = 0
    for _, trace in _traces():
        result = _replayed(trace, name, params)
        for before, now in zip(result.calls, result.calls[1:]):
            if now._changes is None or now._seq != before._seq + 1:
                continue
            gone, come = now._changes
            have = Counter(map(id, before.payload.messages()))
            have.subtract(Counter(map(id, gone)))
            have.update(Counter(map(id, come)))
            assert +have == Counter(map(id, now.payload.messages())), (name, now.call)
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("name,params", POLICIES, ids=[p[0] for p in POLICIES])
def test_the_matrix_from_changes_is_the_matrix_of_full_scans(name, params):
    for label, trace in _traces():
        result = _replayed(trace, name, params)
        probes = propose_probes(trace) + [probe_from_text("re:[0-9]{3}"), probe_from_text("the")]
        views = replay_views(result)
        fast = retention(views, probes, result.drops, "s", result.conversations)
        full = retention([dataclasses.replace(v, tail=None, delta=None) for v in views], probes, result.drops, "s",
                         result.conversations)
        assert fast.export() == full.export(), (label, name)
        assert [r.why for r in fast.rows] == [r.why for r in full.rows]


def _bodies_read(views) -> list[int]:
    """``views`` whose reads are counted: [bodies read]."""
    read = [0]

    def counted(f):
        def g():
            out = f()
            read[0] += sum(map(len, out))
            return out
        return g if f is not None else None
    return [dataclasses.replace(v, payload=counted(v.payload), tail=counted(v.tail), delta=counted(v.delta))
            for v in views], read


@pytest.mark.parametrize("name,params", [("openai-truncation-auto", {"context_window": 4000}),
                                         ("max-messages", {"max_messages": 60}),
                                         ("token-budget", {"max_tokens": 3000})])
def test_a_sliding_window_costs_its_changes_not_its_length(name, params):
    trace = synthetic_trace(1500)
    result = _replayed(trace, name, params)
    probes = propose_probes(trace)
    views, read = _bodies_read(replay_views(result))
    retention(views, probes, result.drops, "s")
    window_slots = sum(len(c.payload) for c in result.calls)
    assert window_slots > 20 * len(trace.stream)          # what reading each window whole costs
    assert read[0] <= 3 * len(trace.stream) + 200          # each body in and out once, one first window


# --- langchain-trim-last on the memory, one add at a time -----------------------------------------------------

def _stream_trace(msgs):
    from agent_core.core.msg import openai_dict
    from agent_core.trace.model import Call, Trace

    calls = [Call(index=i, request={"model": "gpt-4o", "messages": [openai_dict(m) for m in msgs[:k]]},
                  stream_index=k) for i, k in enumerate(range(1, len(msgs) + 1))]     # ids repeat: none given
    return Trace(source="<test>", format="test", calls=calls, stream=list(msgs))


def test_langchain_trimmer_gives_apply_its_say_when_a_dropped_message_shares_an_id_with_a_kept_one():
    """``apply`` matches kept and removed by id (``result_of``): a dropped message whose id a kept one shares is
    neither kept nor reported. The trimmer hands that add to ``apply`` (the reference: replay through ``apply``)."""
    from test_replay_equivalence import assert_equal_to_reference

    from agent_core.core.msg import Msg
    from agent_core.trim.langchain import LangchainTrimLast

    msgs = [Msg(role="system", content="be brief", id="s"), Msg(role="user", content="hello there", id="a"),
            Msg(role="assistant", content="hi, how can I help", id="b"), Msg(role="user", content="again", id="a"),
            Msg(role="assistant", content="sure thing, here it is", id="c"), Msg(role="user", content="more", id="d")]
    for make in (lambda: LangchainTrimLast(3, token_counter="len"),
                 lambda: LangchainTrimLast(2, token_counter="len", include_system=True),
                 lambda: LangchainTrimLast(30)):
        assert_equal_to_reference(_stream_trace(msgs), make)


def test_langchain_trimmer_costs_what_comes_and_goes():
    """``apply`` counts the whole window on every add; the trimmer counts each message in and out once."""
    from agent_core.trim.langchain import LangchainTrimLast

    trace = synthetic_trace(1500)
    policy = LangchainTrimLast(3000, model="gpt-4o")
    sized = [0]
    tokens = policy._tokens.tokens

    def counting(m):
        sized[0] += 1
        return tokens(m)
    policy._tokens.tokens = counting
    result = replay(trace, policy, lint_calls=False)
    window_slots = sum(len(c.payload) for c in result.calls)
    assert window_slots > 20 * len(trace.stream)            # what apply's count of each window costs
    assert sized[0] <= 4 * len(trace.stream)
    assert len(result.drops) > len(trace.stream) // 2
