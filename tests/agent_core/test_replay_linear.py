"""Replay's incremental trimmers at scale equal the definition: anthropic-clear-tool-uses (edited payloads, linear
work), max-messages, naive-drop-oldest and sliding-window (index ranges).

The reference is the policy's own ``apply`` on the whole list after every add (``reference_replay``: a plain
list, every payload converted and counted whole), which is what replay did before; the findings are compared
with ``lint_payload`` on each whole payload, and the report's edited payloads with the full report. The cost test
counts work units (payload materializations, cleared forms made, linter feeds), not seconds.
"""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_anthropic_context import _anthropic_log
from test_replay_equivalence import assert_equal_to_reference, busy_traces

from agent_core.core.msg import openai_dict
from agent_core.lint.scan import _Scan, lint_payload
from agent_core.replay.edited import EditedPayload
from agent_core.replay.engine import replay
from agent_core.replay.probes import probe_from_text, replay_retention
from agent_core.replay.references import expand, referenced_json
from agent_core.trace.model import Trace
from agent_core.trace.synthetic import synthetic_trace
from agent_core.trim.anthropic_context import ClearToolUses
from agent_core.trim.base import ApplyEachAdd, trimmer_for
from agent_core.trim.clear_incremental import ClearToolUsesTrimmer


def _two_tools(trace: Trace) -> Trace:
    """Every third tool call of the synthetic trace calls ``lookup`` instead of ``get_weather``."""
    seen = 0
    for i, m in enumerate(trace.stream):
        if m.tool_calls:
            seen += 1
            if seen % 3 == 0:
                calls = tuple({**c, "function": {**c["function"], "name": "lookup"}} for c in m.tool_calls)
                trace.stream[i] = dataclasses.replace(m, tool_calls=calls)
    by_id = {m.id: m for m in trace.stream}
    for c in trace.calls:
        if len(c.message_ids) == len(c.messages) and all(i in by_id for i in c.message_ids):
            c.request = {**c.request, "messages": [openai_dict(by_id[i]) for i in c.message_ids]}
    return trace


def test_the_policy_offers_its_trimmer_and_a_subclass_falls_back_to_apply():
    assert isinstance(trimmer_for(ClearToolUses()), ClearToolUsesTrimmer)

    class Mine(ClearToolUses):
        pass
    assert isinstance(trimmer_for(Mine()), ApplyEachAdd)


@pytest.mark.parametrize("params", [
    {"trigger": 300, "keep": 1},
    {"trigger": 300, "keep": 0},
    {"trigger": 2000, "keep": 3},
    {"trigger": 10 ** 9},                                                    # never clears
    {"trigger": 300, "keep": 2, "clear_tool_inputs": True},
    {"trigger": 300, "keep": 1, "exclude_tools": "lookup"},
    {"trigger": 300, "keep": 1, "clear_at_least": 400},                     # not applied, then applied
    {"trigger": 300, "keep": 1, "clear_at_least": 10 ** 6},                 # never frees enough
])
def test_replay_equals_apply_after_every_add(params):
    trace = _two_tools(synthetic_trace(60))
    assert_equal_to_reference(trace, lambda: ClearToolUses(**params, model="gpt-4o"))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=busy_traces(), trigger=st.integers(0, 600), keep=st.integers(0, 3), inputs=st.booleans(),
       least=st.sampled_from([None, 0, 30, 200]))
def test_replay_equals_apply_on_random_streams(trace, trigger, keep, inputs, least):
    """Clears, a second conversation, orphan results, two encodings."""
    assert_equal_to_reference(trace, lambda: ClearToolUses(trigger=trigger, keep=keep, clear_tool_inputs=inputs,
                                                           clear_at_least=least, model="gpt-4o"))


def test_anthropic_content_blocks_equal_apply(tmp_path):
    trace = _anthropic_log(tmp_path, rounds=8)
    for keep in (0, 1, 3):
        assert_equal_to_reference(trace, lambda keep=keep: ClearToolUses(trigger=200, keep=keep,
                                                                         clear_tool_inputs=True))


def test_payloads_findings_and_report_equal_the_whole_payloads():
    trace = synthetic_trace(80)
    result = replay(trace, ClearToolUses(trigger=300, keep=1, clear_tool_inputs=True, model="gpt-4o"))
    edited = [c for c in result.calls if isinstance(c.payload, EditedPayload)]
    assert len(edited) > 40 and any(i.startswith("cleared_") for i in result.calls[-1].ids)
    for c in result.calls:           # the linter on each whole payload, the way a single request is linted
        assert [f.export() for f in c.findings] == [f.export() for f in lint_payload(
            c.messages, c.tools, call=c.call, check_tools=True)], f"call {c.call}"
    doc = referenced_json(result)
    assert sum(isinstance(c["payload"], dict) for c in doc["calls"]) > 40     # given as edits of the call before
    assert expand(doc) == {**result.to_json(), "probes": {}}


def _work(calls: int) -> dict[str, int]:
    """Work units of a replay + lint + report + retention of a ``calls``-call synthetic trace."""
    counts = {"materialized": 0, "cleared": 0, "fed": 0}
    both, cleared, feed = EditedPayload._both, ClearToolUses._cleared, _Scan.feed

    def counting_both(self):
        counts["materialized"] += self.length
        return both(self)

    def counting_cleared(self, *args):
        counts["cleared"] += 1
        return cleared(self, *args)

    def counting_feed(self, *args, **kwargs):
        counts["fed"] += 1
        return feed(self, *args, **kwargs)

    trace = synthetic_trace(calls)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(EditedPayload, "_both", counting_both)
        mp.setattr(ClearToolUses, "_cleared", counting_cleared)
        mp.setattr(_Scan, "feed", counting_feed)
        result = replay(trace, ClearToolUses(trigger=300, keep=1, model="gpt-4o"))
        referenced_json(result)
        replay_retention(result, [probe_from_text("Paris"), probe_from_text("re:\\d{3}")])
    counts["messages"] = len(trace.stream)
    return counts


def test_cost_is_linear_in_the_messages():
    """Four times the calls: about four times the work (it was sixteen: every call copied, linted and listed
    the whole history)."""
    small, big = _work(100), _work(400)
    assert big["messages"] >= 3.5 * small["messages"]
    for unit in ("cleared", "fed"):
        assert big[unit] <= 5 * small[unit], (unit, small, big)
        assert big[unit] <= 3 * big["messages"], (unit, big)
    # materialized: the first payload of the edited run, for the report's and the matrix's starting point
    assert big["materialized"] <= 2 * big["messages"], big


# --- the count and turn windows' trimmers (index ranges instead of apply's list copy) ---------------

def _odd_stream_trace() -> Trace:
    """An orphan result at the head, a system message between a call and its results, a second round."""
    from agent_core.core.msg import Msg
    from agent_core.trace.model import Call

    def call(cid: str) -> dict:
        return {"id": cid, "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}

    stream = [Msg(role="system", content="be brief"), Msg(role="tool", content="late", tool_call_id="x0"),
              Msg(role="user", content="hi"), Msg(role="assistant", content="", tool_calls=(call("a"), call("b"))),
              Msg(role="system", content="(mid)"), Msg(role="tool", content="A", tool_call_id="a"),
              Msg(role="tool", content="B", tool_call_id="b"), Msg(role="user", content="and?"),
              Msg(role="assistant", content="ok"), Msg(role="user", content="more"),
              Msg(role="assistant", content="", tool_calls=(call("c"),)), Msg(role="tool", content="C", tool_call_id="c"),
              Msg(role="tool", content="C2", tool_call_id="c"), Msg(role="user", content="end")]
    for r in range(4):     # calls whose results never come, a user message cutting in, and a clean round
        stream += [Msg(role="assistant", content="", tool_calls=(call(f"d{r}"),)), Msg(role="user", content="stop"),
                   Msg(role="assistant", content="ok"), Msg(role="user", content=f"round {r}"),
                   Msg(role="assistant", content="", tool_calls=(call(f"e{r}"),)),
                   Msg(role="tool", content="E", tool_call_id=f"e{r}"), Msg(role="assistant", content="done")]
    calls = [Call(index=i, request={"model": "gpt-4o", "messages": [openai_dict(m) for m in stream[:k]]},
                  stream_index=k, message_ids=[m.id for m in stream[:k]])
             for i, k in enumerate(range(1, len(stream) + 1))]
    return Trace(source="<odd>", format="synthetic", calls=calls, stream=stream)


def test_window_trimmers_equal_apply_on_odd_streams():
    from agent_core.trim.summary import SummaryWindow
    from agent_core.trim.window import MaxMessages, NaiveDropOldest, SlidingWindow

    trace = _odd_stream_trace()
    for n in range(1, 8):
        for make in (lambda n=n: MaxMessages(n), lambda n=n: NaiveDropOldest(n), lambda n=n: SlidingWindow(n),
                     lambda n=n: SummaryWindow(n)):
            assert not isinstance(trimmer_for(make()), ApplyEachAdd)
            assert_equal_to_reference(trace, make)


# --- the windows' lint: a slid window is scanned until it settles like the history's scan --------------------

def _assert_findings_are_whole_payload_lints(result, profile: str = "openai") -> None:
    for c in result.calls:
        want = [f.export() for f in lint_payload(c.messages, c.tools, profile=profile, call=c.call, check_tools=True)]
        assert [f.export() for f in c.findings] == want, f"call {c.call}"


_WINDOWS = [
    lambda: __import__("agent_core.trim.window", fromlist=["MaxMessages"]).MaxMessages(9),
    lambda: __import__("agent_core.trim.window", fromlist=["NaiveDropOldest"]).NaiveDropOldest(7),
    lambda: __import__("agent_core.trim.window", fromlist=["SlidingWindow"]).SlidingWindow(2),
    lambda: __import__("agent_core.trim.budget", fromlist=["TokenBudget"]).TokenBudget(900, 100, model="gpt-4o"),
    lambda: __import__("agent_core.trim.langchain", fromlist=["LangchainTrimLast"]).LangchainTrimLast(700),
    lambda: __import__("agent_core.trim.summary", fromlist=["SummaryWindow"]).SummaryWindow(2),
    lambda: __import__("agent_core.trim.items", fromlist=["TruncationAuto"]).TruncationAuto(context_window=1500,
                                                                                           model="gpt-4o"),
]


@pytest.mark.parametrize("make", _WINDOWS)
@pytest.mark.parametrize("profile", ["openai", "deepseek"])
def test_window_findings_equal_whole_payload_lints_and_most_windows_are_finished_from_the_leader(make, profile):
    from agent_core.lint import windows

    merged = []
    finish = windows.WindowLint._finish_from_leader

    def counting(self, *args):
        merged.append(1)
        return finish(self, *args)

    trace = _two_tools(synthetic_trace(120))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(windows.WindowLint, "_finish_from_leader", counting)
        result = replay(trace, make(), profile=profile)
    _assert_findings_are_whole_payload_lints(result, profile)
    if result.policy != "summary-window":      # its head (the summary) changes at each fold: read from the start
        assert len(merged) >= len(result.calls) // 2


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=busy_traces(), which=st.integers(0, len(_WINDOWS) - 1))
def test_window_findings_on_random_streams(trace, which):
    """Clears, conversations, orphan results, a system message in the middle: the findings of whole payloads."""
    _assert_findings_are_whole_payload_lints(replay(trace, _WINDOWS[which]()))


@pytest.mark.parametrize("make", _WINDOWS[:4])
def test_window_findings_of_an_odd_stream(make):
    """Results that never come, a user message cutting in: ``finish`` reads the leader's record, moved."""
    result = replay(_odd_stream_trace(), make())
    assert any(f.rule == "missing-tool-result" for c in result.calls for f in c.findings)
    _assert_findings_are_whole_payload_lints(result)


def test_window_findings_of_the_naive_trim_sample():
    from agent_core.core.paths import SAMPLE_TRACES
    from agent_core.ingest.detect import load_any
    from agent_core.trim.window import NaiveDropOldest

    for name in ("naive_trim_orphan.jsonl", "long_trimmed_fact.jsonl", "huge_tool_result.jsonl"):
        trace = load_any(SAMPLE_TRACES / name)
        result = replay(trace, NaiveDropOldest(6))
        assert name != "naive_trim_orphan.jsonl" or any(c.findings for c in result.calls)
        _assert_findings_are_whole_payload_lints(result)
