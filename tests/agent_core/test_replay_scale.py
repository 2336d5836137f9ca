"""Replay at 25,000 calls: the fast paths added for scale equal the definitions they replace.

- keep-all, openai-truncation-auto and anthropic-clear-thinking trim through an incremental trimmer in
  replay; the reference is ``policy.apply`` after every add (``test_replay_equivalence.reference_replay``);
- replayed payloads share the memory's lists (keep-all's N payloads are one list, not N copies);
- the JSON report is written element by element with the C encoder: the bytes are ``json.dump``'s.
"""
from __future__ import annotations

import dataclasses
import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_replay_equivalence import assert_equal_to_reference, busy_traces

from agent_core.core.msg import Msg, openai_dict
from agent_core.replay.engine import replay
from agent_core.replay.json_out import write_json
from agent_core.replay.report import report_json, run_replay
from agent_core.trace.model import Trace
from agent_core.trace.synthetic import synthetic_trace
from agent_core.trim.anthropic_context import ClearThinking
from agent_core.trim.base import ApplyEachAdd, trimmer_for
from agent_core.trim.items import TruncationAuto
from agent_core.trim.window import KeepAll


def _thinking(m: Msg, k: int) -> Msg:
    """An assistant message with an Anthropic thinking block before its text (as extended thinking sends it)."""
    text = m.content if isinstance(m.content, str) else ""
    return dataclasses.replace(m, content=[{"type": "thinking", "thinking": f"step {k}", "signature": f"sig{k}"},
                                           {"type": "text", "text": text or "ok"}])


def _with_thinking(trace: Trace, every: int) -> Trace:
    """Every ``every``-th assistant message without tool calls gets a thinking block."""
    seen = 0
    for i, m in enumerate(trace.stream):
        if m.role == "assistant" and not m.tool_calls:
            seen += 1
            if seen % every == 0:
                trace.stream[i] = _thinking(m, i)
    by_id = {m.id: m for m in trace.stream}
    for c in trace.calls:      # the recorded payloads send the same messages
        if len(c.message_ids) == len(c.messages) and all(i in by_id for i in c.message_ids):
            c.request = {**c.request, "messages": [openai_dict(by_id[i]) for i in c.message_ids]}
    return trace


@pytest.mark.parametrize("keep", [None, 0, 1, 2, 5])
@pytest.mark.parametrize("every", [1, 3])
def test_clear_thinking_in_replay_equals_apply_after_every_add(keep, every):
    trace = _with_thinking(synthetic_trace(60), every)
    assert sum(1 for m in trace.stream if isinstance(m.content, list)) >= 60 // (every * 3)
    assert_equal_to_reference(trace, lambda: ClearThinking(keep))
    cleared = [d for d in replay(trace, ClearThinking(keep), lint_calls=False).drops]
    assert bool(cleared) == (keep is not None)      # the test reaches the clearing path


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=busy_traces(), keep=st.sampled_from([None, 0, 1, 2]), every=st.integers(1, 3))
def test_clear_thinking_equals_apply_on_random_streams(trace, keep, every):
    assert_equal_to_reference(_with_thinking(trace, every), lambda: ClearThinking(keep))


@pytest.mark.parametrize("window", [120, 400, 2000, 10 ** 6])
def test_truncation_auto_in_replay_equals_apply_after_every_add(window):
    trace = synthetic_trace(80)
    assert_equal_to_reference(trace, lambda: TruncationAuto(context_window=window, model="gpt-4o"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=busy_traces(), window=st.integers(30, 800))
def test_truncation_auto_equals_apply_on_random_streams(trace, window):
    assert_equal_to_reference(trace, lambda: TruncationAuto(context_window=window, model="gpt-4o"))


def test_keep_all_equals_apply_and_its_payloads_share_one_list():
    trace = synthetic_trace(150)
    assert_equal_to_reference(trace, KeepAll)
    assert not isinstance(trimmer_for(KeepAll()), ApplyEachAdd)
    result = replay(trace, KeepAll(), lint_calls=False)
    shared = {id(c.payload.added) for c in result.calls}
    assert len(shared) == 1                              # N payloads, one list of dicts
    assert len(result.calls[-1].payload.added) == len(trace.stream)
    # and each call still reads as its own payload, which a later add does not change
    assert [len(c.messages) for c in result.calls] == [c.position for c in result.calls]


def test_a_trim_does_not_change_a_payload_already_taken():
    """Copy on write: the memory never deletes from a list a snapshot shares."""
    trace = synthetic_trace(120)
    result = replay(trace, TruncationAuto(context_window=900, model="gpt-4o"), lint_calls=False)
    assert result.drops
    for c in result.calls:
        assert [m.id for m in trace.stream[c.position - len(c.ids):c.position]] != [] or not c.ids
        assert all(i.startswith("msg_") for i in c.ids)
        ids = c.ids
        assert ids == sorted(ids) and ids[-1] == trace.stream[c.position - 1].id   # newest messages, in order


@pytest.mark.parametrize("policy", ["keep-all", "token-budget", "summary-window", "anthropic-clear-thinking"])
def test_the_report_is_written_as_json_dump_writes_it(policy):
    trace = synthetic_trace(150)
    result, recorded, replayed = run_replay(trace, policy)
    doc = report_json(result, recorded, replayed, trace)
    buf = io.StringIO()
    write_json(doc, buf)
    want = io.StringIO()
    json.dump(doc, want, ensure_ascii=False, separators=(",", ":"))
    assert buf.getvalue() == want.getvalue()


@pytest.mark.parametrize("value", [
    {}, [], {"a": [1, 2.5, None, True, {"b": []}], 1: "x", None: [{}], False: 1.0e300}, [[[]], [{}], ("t", 1)],
    {"messages": [{"id": "m", "message": {"role": "user", "content": "é \u2028 \" \\ 你好"}}] * 3},
    {"nan": float("nan"), "inf": [float("inf"), -float("inf")]},
])
@pytest.mark.parametrize("depth", [0, 1, 2, 4])
def test_write_json_bytes_equal_json_dump(value, depth):
    buf = io.StringIO()
    write_json(value, buf, depth=depth)
    want = io.StringIO()
    json.dump(value, want, ensure_ascii=False, separators=(",", ":"))
    assert buf.getvalue() == want.getvalue()
