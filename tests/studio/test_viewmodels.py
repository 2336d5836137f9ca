"""View models behind the studio screens: diff, tokens, cost, pagination, findings, timeline, lineage, learn."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_core.core import models
from agent_core.core.msg import message_key
from agent_core.lint.profiles import get_profile
from agent_core.lint.scan import lint_trace
from agent_core.trace.model import Call, Trace
from agent_core.trace.reader import read_trace
from agent_core.trace.tokens import counter_for
from studio.viewmodels import learn, tokens
from studio.viewmodels.diff import diff_calls
from studio.viewmodels.findings import findings_by_message, findings_for
from studio.viewmodels.lineage import (
    Graph,
    calls_including,
    compact_ranges,
    lineage_graph,
    turns,
)
from studio.viewmodels.paging import paginate
from studio.viewmodels.timeline import table_view, timeline_rows, tool_links, with_findings


@pytest.fixture(scope="module")
def classic(request):
    from agent_core.core.paths import SAMPLE_TRACES
    return read_trace(SAMPLE_TRACES / "classic_remembers.jsonl")


@pytest.fixture(scope="module")
def orphan():
    from agent_core.core.paths import SAMPLE_TRACES
    return read_trace(SAMPLE_TRACES / "naive_trim_orphan.jsonl")


# --- diff -----------------------------------------------------------------

def test_diff_of_full_history_call_lists_exactly_the_new_tail(classic):
    prev, cur = classic.calls[2].messages, classic.calls[3].messages
    d = diff_calls(classic, 3)
    assert d.previous == 2
    assert [e.message for e in d.added] == cur[len(prev):]
    assert [e.index for e in d.added] == list(range(len(prev), len(cur)))
    assert [e.message for e in d.kept] == prev
    assert d.dropped == []
    assert d.counts() == {"added": len(cur) - len(prev), "kept": len(prev), "dropped": 0}


def test_first_call_is_all_added(classic):
    d = diff_calls(classic, 0)
    assert d.previous is None
    assert [e.status for e in d.entries] == ["added"] * len(classic.calls[0].messages)


def test_dropped_messages_name_the_trim_event_that_removed_them(orphan):
    d = diff_calls(orphan, 3)
    assert d.dropped, "naive trimming drops messages between call 2 and 3"
    for e in d.dropped:
        assert e.msg_id is not None
        assert e.event is not None and e.msg_id in e.event.event.removed
        assert e.event.event.type == "trim"
    kept_or_added = {message_key(e.message) for e in d.entries if e.status != "dropped"}
    assert kept_or_added == {message_key(m) for m in orphan.calls[3].messages}


def test_diff_without_stream_ids_matches_by_body():
    a = {"role": "user", "content": "hi"}
    b = {"role": "assistant", "content": "hello"}
    c = {"role": "user", "content": "again"}
    trace = Trace(source="t", format="request-jsonl", calls=[
        Call(index=0, request={"messages": [a, b]}), Call(index=1, request={"messages": [b, c]})])
    d = diff_calls(trace, 1)
    assert [(e.status, e.message) for e in d.entries] == [("kept", b), ("added", c), ("dropped", a)]
    assert d.dropped[0].event is None


# --- tokens, cost, pagination ---------------------------------------------

def test_token_series_splits_the_exact_payload_count(classic):
    series = tokens.token_series(classic)
    for call, t in zip(classic.calls, series):
        assert t.estimated == counter_for(call.model).count_payload(call.messages, call.tools)
        assert sum(t.by_role.values()) == t.estimated
        assert t.reported == call.usage["prompt_tokens"]
    rows = tokens.token_rows(series)
    assert {r["part"] for r in rows} <= set(tokens.ROLE_PARTS) | {"other"}
    for t in series:
        parts = sum(r["tokens"] for r in rows if r["call"] == t.call)
        assert parts == t.estimated


def _priced_call(model: str, prompt: int, completion: int, index: int = 0) -> Call:
    return Call(index=index, request={"model": model, "messages": [{"role": "user", "content": "hi"}]},
                response={"model": model, "usage": {"prompt_tokens": prompt, "completion_tokens": completion}})


def test_cumulative_cost_uses_the_price_table():
    call = _priced_call("gpt-4o", 1000, 100)
    trace = Trace(source="t", format="x", calls=[call, Call(index=1, request=call.request, response=call.response)])
    pricing = models.price_as(trace.models)
    rows = tokens.cumulative_cost(tokens.token_series(trace), pricing)
    one = (1000 * 2.50 + 100 * 10.00) / 1_000_000     # gpt-4o list price, USD per 1M in / out
    assert [r["cumulative_prompt_tokens"] for r in rows] == [1000, 2000]
    assert rows[-1]["cumulative_cost_usd"] == pytest.approx(2 * one)
    assert pricing.label == "gpt-4o list price"


def test_price_and_window_use_the_longest_prefix():
    def cost(model: str, chosen: str | None = None) -> tuple[float, str]:
        trace = Trace(source="t", format="x", calls=[_priced_call(model, 1_000_000, 1_000_000)])
        pricing = models.price_as(trace.models, chosen)
        return tokens.cumulative_cost(tokens.token_series(trace), pricing)[-1]["cumulative_cost_usd"], pricing.label

    assert cost("gpt-4o-mini-2024-07-18") == (pytest.approx(0.15 + 0.60), "gpt-4o-mini list price")
    assert cost("gpt-4-0613") == (pytest.approx(30.00 + 60.00), "gpt-4 list price")
    # an unknown or unpriced model is never a silent $0: it is priced as gpt-4o-mini, and says so
    assert cost("mystery") == (pytest.approx(0.15 + 0.60), "priced as gpt-4o-mini")
    assert cost("chain-studio-demo-model") == (pytest.approx(0.15 + 0.60), "priced as gpt-4o-mini")
    assert cost("chain-studio-demo-model", "gpt-4.1") == (pytest.approx(2.00 + 8.00), "priced as gpt-4.1")

    def window(model):
        return tokens.token_series(Trace(source="t", format="x", calls=[_priced_call(model, 1, 1)]))[0].context_window

    assert window("gpt-4-0613") == 8192
    assert window("chain-studio-demo-model") == 32_768
    assert window(None) == 128_000


def test_truncation_suspects():
    t = lambda call, est, rep: tokens.CallTokens(call, {}, est, rep, None, 128_000)  # noqa: E731
    assert tokens.truncation_suspects([t(0, 1000, 990), t(1, 1000, 300), t(2, 1000, None)]) == [1]


@settings(max_examples=60, deadline=None)
@given(total=st.integers(0, 5000), page=st.integers(-3, 200), size=st.integers(1, 100))
def test_paginate_covers_every_item_once(total, page, size):
    p = paginate(total, page, size)
    assert 1 <= p.page <= p.pages
    assert 0 <= p.start <= p.stop <= total
    assert p.stop - p.start <= size
    if total:
        assert p.stop > p.start
        pages = [paginate(total, k, size) for k in range(1, p.pages + 1)]
        assert [i for q in pages for i in range(q.start, q.stop)] == list(range(total))


def test_largest_messages_are_distinct_and_sorted():
    from agent_core.core.paths import SAMPLE_TRACES
    trace = read_trace(SAMPLE_TRACES / "huge_tool_result.jsonl")
    big = tokens.largest_messages(trace, 5)
    assert [b.tokens for b in big] == sorted((b.tokens for b in big), reverse=True)
    assert big[0].role == "tool"
    first = trace.calls[big[0].first_call].messages[big[0].index]
    assert big[0].tokens == counter_for(trace.calls[0].model).count_message(first)
    assert big[0].calls == sum(1 for c in trace.calls if first in c.messages)


def test_findings_for_exports_the_linter(orphan):
    found = findings_for(orphan, "openai")
    assert found == [f.export() for f in lint_trace(orphan, profile="openai")]
    orphans = [f for f in found if f["rule"] == "orphan-tool"]
    assert orphans and all(orphan.calls[f["call"]].messages[f["index"]]["role"] == "tool" for f in orphans)
    by_msg = findings_by_message(found, orphans[0]["call"])
    assert orphans[0] in by_msg[orphans[0]["index"]]


def test_timeline_rows(orphan):
    series = tokens.token_series(orphan)
    rows = timeline_rows(orphan, series, findings_for(orphan))
    assert [r["call"] for r in rows] == list(range(len(orphan.calls)))
    assert set(rows[0]) == {"call", "time", "latency_ms", "model", "messages", "tools", "estimated", "reported",
                            "finish", "status", "findings", "purpose", "dropped", "failed"}
    rejected = [r for r in rows if r["status"] == 400]
    assert rejected and all("orphan-tool" in r["findings"] and r["finish"] == "error" for r in rejected)


def test_rows_built_before_the_findings_equal_the_rows_built_with_them(orphan):
    found = findings_for(orphan)
    assert any(f.get("severity") != "info" for f in found)     # a trace with problems in its findings column
    plain = timeline_rows(orphan, None, [])
    assert all(r["findings"] == "" for r in plain)
    assert with_findings(plain, found) == timeline_rows(orphan, None, found)
    assert with_findings(plain, []) is plain


def test_tool_links():
    msgs = [{"role": "assistant", "tool_calls": [{"id": "a"}, {"id": "b"}]}, {"role": "tool", "tool_call_id": "a"},
            {"role": "tool", "tool_call_id": "zzz"}]
    assert tool_links(msgs) == ({"a": 0, "b": 0}, {"a": 1, "zzz": 2})



class _Read(list):
    """A payload that records how many of its messages were read."""

    read = 0

    def __iter__(self):
        for self.read, m in enumerate(super().__iter__(), start=1):
            yield m


def _rounds(n: int) -> list[dict]:
    out: list[dict] = [{"role": "user", "content": "go"}]
    for k in range(n):
        out += [{"role": "assistant", "tool_calls": [{"id": f"c{k}"}]}, {"role": "tool", "tool_call_id": f"c{k}"}]
    return out


def test_tool_links_of_the_messages_on_screen_read_only_as_far_as_their_other_ends():
    msgs = _Read(_rounds(1000))
    made, answered = tool_links(msgs, upto=25)      # messages 0-24: calls c0-c11 and c0-c11's results
    full = tool_links(_rounds(1000))
    assert msgs.read == 26                          # message 25 answers c12, made by message 23 on screen
    for k in range(12):
        assert made[f"c{k}"] == full[0][f"c{k}"] and answered[f"c{k}"] == full[1][f"c{k}"]
    # a call on screen never answered: the whole payload is read to say so
    dangling = _Read([*_rounds(2), {"role": "assistant", "tool_calls": [{"id": "lost"}]}, *_rounds(500)[1:]])
    made, answered = tool_links(dangling, upto=6)
    assert "lost" not in answered and dangling.read == len(dangling)
    # a result on screen whose call comes later (or never) is looked for the same way
    late = _Read([{"role": "tool", "tool_call_id": "x"}, *_rounds(300),
                  {"role": "assistant", "tool_calls": [{"id": "x"}]}])
    assert tool_links(late, upto=1)[0]["x"] == len(late) - 1


def test_the_call_tables_view_hides_empty_columns_and_counts_failed_calls():
    rows = [{"call": i, "model": "gpt-4o", "time": "", "latency_ms": None, "failed": i == 2,
             "findings": "orphan" if i == 1 else "", "dropped": "", "messages": 3, "tools": None, "estimated": None,
             "reported": 10, "finish": "stop", "status": None} for i in range(4)]
    view = table_view(rows, [])
    assert view.shown is rows and view.positions == {0: 0, 1: 1, 2: 2, 3: 3} and view.failed == 1
    assert view.columns == ["at", "call", "dropped", "findings", "messages", "estimated", "reported", "finish"]
    rows[3]["model"] = "gpt-4o-mini"
    assert "model" in table_view(rows, []).columns
    found = table_view(rows, ["findings"])
    assert [r["call"] for r in found.shown] == [1] and found.positions == {1: 0} and found.failed == 1

# --- lineage --------------------------------------------------------------

def test_turns_and_calls_including(classic):
    ts = turns(classic)
    assert ts[0].sequence() == ["system"]
    assert [t.number for t in ts] == list(range(len(ts)))
    assert sum(len(t.messages) for t in ts) == len(classic.stream)
    weather = next(t for t in ts if any(m.role == "tool" for m in t.messages))
    assert weather.sequence() == ["user", "assistant(tool_calls: get_weather)", "tool", "assistant"]
    first_user = ts[1].messages[0]
    assert calls_including(classic, first_user.id) == [c.index for c in classic.calls]


def test_lineage_graph_edges_follow_parent_ids(classic):
    g = lineage_graph(classic, 0, 100)
    ids = {n[0] for n in g.nodes}
    assert ids == {m.id for m in classic.stream}
    assert set(g.edges) == {(m.parent_id, m.id) for m in classic.stream if m.parent_id in ids}


_DOT_STRING = r'"(?:[^"\\]|\\.)*"'


@settings(max_examples=80, deadline=None)
@given(text=st.text(max_size=60))
def test_dot_labels_stay_inside_their_quotes(text):
    dot = Graph(nodes=[("id\"1", text, "user"), ("x", "<b>" + text, "<script>")], edges=[("id\"1", "x")]).to_dot()
    for line in dot.splitlines()[3:-1]:
        # every line is: "id" [label="..." ...]; or "a" -> "b"; with nothing outside the quoted strings but syntax
        stripped = re.sub(_DOT_STRING, "S", line)
        assert re.fullmatch(r"\s*S( \[label=S(, [a-z]+=S)+\]| -> S);", stripped), line


# --- learn ----------------------------------------------------------------

def test_learn_steps_grow_by_one_message_and_pair_ids():
    steps = learn.steps()
    assert [s.role for s in steps] == ["system", "user", "assistant", "tool", "assistant", "user", "assistant"]
    for a, b in zip(steps, steps[1:]):
        assert b.payload[:-1] == a.payload
    call_id = steps[2].payload[-1]["tool_calls"][0]["id"]
    assert steps[3].payload[-1]["tool_call_id"] == call_id
    assert [s.sends for s in steps] == [False, True, False, True, False, True, False]
    assert "Ada" in steps[-1].payload[-1]["content"]


def test_learn_explains_why_the_second_call_sends_no_tools():
    steps = learn.steps()
    plain = [s for s in steps if s.trade_off is None]
    [tool_step] = [s for s in steps if s.trade_off]
    assert tool_step.role == "tool" and tool_step.sends and not tool_step.tools
    assert len(plain) == len(steps) - 1
    for text in tool_step.trade_off.values():
        assert 'tool_choice "none"' in text and "Bedrock" in text and "OpenAI" in text
    # The explanation quotes the bedrock profile's own text, so the page and the linter agree.
    assert get_profile("bedrock").template("tools-missing-for-history") in tool_step.trade_off["en"]


def test_broken_variants_carry_the_providers_exact_text():
    openai = get_profile("openai")
    v = {b.key: b for b in learn.broken_variants()}
    assert v["orphan-tool"].rule == "orphan-tool"
    assert v["orphan-tool"].error["error"]["message"] == (
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")
    assert v["orphan-tool"].error["error"]["param"] == "messages.[1].role"
    missing = v["user-between"].error["error"]["message"]
    assert missing.startswith("An assistant message with 'tool_calls' must be followed by tool messages")
    assert v["user-between"].messages[2]["tool_calls"][0]["id"] in missing
    assert v["history-not-passed"].error is None
    assert "Ada" not in (v["history-not-passed"].reply or "")
    assert openai.name == "openai"


def test_compact_ranges():
    assert compact_ranges([8, 0, 1, 2, 5, 7, 2]) == "0–2, 5, 7–8"
    assert compact_ranges([]) == ""
    assert compact_ranges(list(range(84))) == "0–83"


def test_token_series_survives_non_object_messages():
    call = Call(index=0, request={"model": 7, "messages": ["hi", {"role": 5, "content": {"x": 1}}, None],
                                  "tools": ["x", {"function": "y"}]})
    t = tokens.token_series(Trace(source="t", format="x", calls=[call]))[0]
    assert t.by_role["other"] > 0 and t.estimated == sum(t.by_role.values())
    assert tokens.largest_messages(Trace(source="t", format="x", calls=[call]))
