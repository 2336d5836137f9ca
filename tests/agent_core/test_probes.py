"""Forgetting diagnosis: proposed probes, the retention matrix, and the trim event behind each loss."""
from __future__ import annotations

import pytest

from agent_core.core.msg import Msg
from agent_core.replay.engine import chat_calls, replay
from agent_core.replay.probes import (
    _candidates,
    diagnose,
    probe_from_text,
    propose_probes,
    recorded_retention,
    replay_retention,
)
from agent_core.trace.model import Call, Trace
from agent_core.trace.reader import read_trace
from agent_core.trim.registry import make_policy
from agent_core.trim.window import KeepAll, MaxMessages, SlidingWindow

FACT = "A-2024-0715"


@pytest.fixture(scope="module")
def long_trace() -> Trace:
    from agent_core.core.paths import SAMPLE_TRACES
    return read_trace(SAMPLE_TRACES / "long_trimmed_fact.jsonl")


def test_proposals_from_the_early_turns_name_the_id_and_the_name(long_trace):
    probes = propose_probes(long_trace)
    assert [(p.kind, p.pattern) for p in probes] == [("id", FACT), ("name", "小明")]
    first_user = next(m for m in long_trace.stream if m.role == "user")
    assert all(p.origin == first_user.id for p in probes) and probes[0].label == f"id {FACT}"


def test_proposals_read_the_first_user_turns_without_building_the_stream(tmp_path):
    """A trace read from a file keeps its stream as rows until read: the proposals build only the user messages
    they read, and propose what the whole stream's user turns give (the first third of them, at most five)."""
    from agent_core.core.paths import SAMPLE_TRACES
    from agent_core.trace.synthetic import synthetic_trace
    from agent_core.trace.writer import write_trace

    path = tmp_path / "t.jsonl"
    write_trace(synthetic_trace(60), path)
    text = path.read_text(encoding="utf-8")
    for turn in (2, 4, 5, 6):     # facts in later early turns (the fifth is read, the sixth is not)
        text = text.replace(f"第 {turn} 轮：", f"第 {turn} 轮：ticket T-{turn}0{turn}0 ")
    path.write_text(text, encoding="utf-8")
    for source in (path, SAMPLE_TRACES / "long_trimmed_fact.jsonl", SAMPLE_TRACES / "classic_remembers.jsonl"):
        deferred = read_trace(source)
        assert deferred.__dict__.get("_pending_stream") is not None
        probes = propose_probes(deferred)
        assert deferred.__dict__.get("_pending_stream") is not None, "the whole stream was built"
        whole = read_trace(source)
        users = [m for m in whole.stream if m.role == "user"]
        assert [m.text for m in deferred.first_user_messages(4)] == [m.text for m in users[:4]]
        turns = min(5, max(1, len(users) // 3))
        rank = {"id": 0, "email": 1, "phone": 2, "name": 3, "number": 4}
        found: dict[str, tuple] = {}
        for turn, m in enumerate(users[:turns]):
            for kind, value in _candidates(m.text):
                found.setdefault(value, (rank[kind], turn, kind, value, m.id))
        assert [(p.kind, p.pattern, p.origin) for p in probes] == [r[2:] for r in sorted(found.values())[:8]]


def test_candidates_cover_emails_phones_ids_names_numbers():
    text = ("Hi, my name is Mia Li, user id mia_li_3668, reservation ZFA04Y. Mail mia.li@example.com or "
            "call +1 (415) 555-0123. I need 3 bags and I paid 1250 dollars.")
    assert _candidates(text) == [("email", "mia.li@example.com"), ("id", "mia_li_3668"), ("id", "ZFA04Y"),
                                 ("phone", "+1 (415) 555-0123"), ("name", "Mia Li"), ("number", "1250")]


def test_diagnosis_names_the_call_where_the_early_fact_was_dropped(long_trace):
    calls = chat_calls(long_trace)
    # computed independently: the first call whose payload no longer carries the fact
    first_gone = next(c.index for c in calls if not any(FACT in str(m.get("content")) for m in c.messages))
    holder = next(m for m in long_trace.stream if FACT in m.text)
    row = recorded_retention(long_trace, [probe_from_text(FACT)]).rows[0]
    assert row.first_present == calls[0].index and row.first_gone == first_gone
    assert row.dropped_by.msg_id == holder.id and row.dropped_by.policy == "max-messages"
    removing = long_trace.event_that_removed(holder.id)
    assert row.dropped_by.after_add == removing.after_add and row.dropped_by.reason == removing.event.reason
    assert row.why.startswith(f"'{FACT}' is gone from call {first_gone} under recorded: max-messages removed "
                              f"the user message holding it ({holder.id}) after add {removing.after_add}")
    assert row.returned is None
    assert row.present == [i < calls.index(next(c for c in calls if c.index == first_gone)) for i in range(len(calls))]


def test_replayed_policies_each_get_their_own_diagnosis(long_trace):
    probes = [probe_from_text(FACT)]
    summary = replay(long_trace, make_policy("summary-window", keep_turns=3))
    naive = replay(long_trace, make_policy("naive-drop-oldest", max_messages=40))
    matrices = diagnose(long_trace, probes, [summary, naive])
    assert [m.source for m in matrices] == ["recorded", "summary-window(keep_turns=3, summarizer=extractive)",
                                            "naive-drop-oldest(max_messages=40)"]
    kept = matrices[1].rows[0]
    assert all(kept.present) and kept.first_gone is None and "was not forgotten" in kept.why
    lost = matrices[2].rows[0]
    assert lost.first_gone is not None and lost.dropped_by.policy == "naive-drop-oldest"
    assert matrices[2].matrix[0] == [True] and len(matrices[2].matrix) == len(naive.calls)


def test_a_fact_pushed_out_of_a_capped_summary_is_blamed_on_the_summary(long_trace):
    from agent_core.trim.summarizers import ExtractiveSummarizer
    from agent_core.trim.summary import SummaryWindow

    result = replay(long_trace, SummaryWindow(keep_turns=2, summarizer=ExtractiveSummarizer(max_facts=3)))
    row = replay_retention(result, [probe_from_text(FACT)]).rows[0]
    assert row.first_gone is not None and row.dropped_by.policy == "summary-window"
    assert row.dropped_by.msg_id.startswith("summary_") and row.dropped_by.role == "system"
    assert "(its summary did not keep the fact)" in row.why


def test_regex_probe_and_bad_regex():
    p = probe_from_text(r"re:A-\d{4}-\d{4}")
    assert p.regex and p.compiled().search("id A-2024-0715")
    with pytest.raises(Exception):
        probe_from_text("re:(")


def _hand_trace(texts_per_call: list[list[str]]) -> Trace:
    msgs = {}
    calls = []
    stream = []
    for i, texts in enumerate(texts_per_call):
        for t in texts:
            if t not in msgs:
                msgs[t] = Msg(role="user", content=t)
                stream.append(msgs[t])
        calls.append(Call(index=i, request={"messages": [msgs[t].to_openai() for t in texts]},
                          stream_index=len(stream), message_ids=[msgs[t].id for t in texts]))
    return Trace(source="<hand>", format="test", calls=calls, stream=stream)


def test_gone_without_a_trim_event_and_back_again():
    trace = _hand_trace([["my id is X-77"], ["hello"], ["X-77 again"]])
    row = recorded_retention(trace, [probe_from_text("X-77")]).rows[0]
    assert row.present == [True, False, True] and row.first_gone == 1 and row.returned == 2
    assert row.dropped_by is None
    assert "no trim event removed it" in row.why and "back in call 2" in row.why


def test_never_present():
    trace = _hand_trace([["hello"]])
    row = recorded_retention(trace, [probe_from_text("nobody")]).rows[0]
    assert row.present == [False] and row.first_present is None and "never reached the model" in row.why


def test_history_not_passed_sample_forgets_without_any_trim(sample_traces):
    trace = read_trace(sample_traces / "history_not_passed.jsonl")
    row = recorded_retention(trace, [probe_from_text("我叫小明")]).rows[0]
    assert row.first_gone is not None and row.dropped_by is None and "no trim event" in row.why
    assert replay_retention(replay(trace, KeepAll()), [probe_from_text("我叫小明")]).rows[0].first_gone is None


def test_max_messages_replay_diagnosis_equals_the_recorded_one(long_trace):
    probes = propose_probes(long_trace)
    rec = recorded_retention(long_trace, probes)
    rep = replay_retention(replay(long_trace, MaxMessages(40)), probes)
    assert rep.matrix == rec.matrix
    assert [r.first_gone for r in rep.rows] == [r.first_gone for r in rec.rows]
    assert [r.dropped_by.msg_id for r in rep.rows] == [r.dropped_by.msg_id for r in rec.rows]
    assert rep.export()[f"id {FACT}"]["first_gone"] == rec.rows[0].first_gone


def test_diagnosis_stays_inside_the_conversation_of_the_fact(real_traces):
    from agent_core.ingest.detect import load_any

    trace = load_any(real_traces / "tau-bench-gpt-4o-airline" / "gpt-4o-airline.sample.json")
    first = trace.meta["conversations"][0]
    user_id = "mia_li_3668"
    assert any(user_id in m.text for m in trace.stream[first["messages"][0]:first["messages"][1]])
    row = recorded_retention(trace, [probe_from_text(user_id)]).rows[0]
    # the next conversation not knowing the first user's id is not forgetting
    assert row.first_gone is None
    assert row.why.endswith(f"to the end of its conversation (call {first['calls'][1] - 1}) carries it.")


def test_views_read_by_their_tails_give_the_matrix_of_full_scans():
    import dataclasses

    from agent_core.core.paths import SAMPLE_TRACES
    from agent_core.replay.probes import (
        recorded_drops,
        recorded_views,
        replay_views,
        retention,
    )
    checked = 0
    for path in sorted(SAMPLE_TRACES.glob("*.jsonl")):
        trace = read_trace(path)
        probes = propose_probes(trace) + [probe_from_text(FACT)]
        sources = [(recorded_views(trace), recorded_drops(trace))]
        for name in ("naive-drop-oldest", "sliding-window"):
            result = replay(trace, make_policy(name, **({"max_messages": 6} if name.startswith("naive") else {"turns": 2})))
            sources.append((replay_views(result), result.drops))
        for views, drops in sources:
            checked += sum(v.tail is not None for v in views)
            fast = retention(views, probes, drops, "s")
            full = retention([dataclasses.replace(v, tail=None) for v in views], probes, drops, "s")
            assert fast.export() == full.export() and [r.why for r in fast.rows] == [r.why for r in full.rows]
    assert checked > 20    # the tails were really used


def test_of_two_holders_dropped_by_one_add_the_earliest_is_named(long_trace):
    """sliding-window drops the user turn '我叫小明' and the reply repeating the name in one add: the
    report names the user message, the first of them in the payload, on every run (not by set order)."""
    result = replay(long_trace, SlidingWindow(10))
    row = replay_retention(result, [probe_from_text("小明")]).rows[0]
    holders = [m for m in long_trace.stream if "小明" in m.text][:2]
    assert [m.role for m in holders] == ["user", "assistant"]
    same_add = {d.after_add for d in result.drops if d.msg_id in {m.id for m in holders}}
    assert len(same_add) == 1                     # both went in the same add
    assert f"removed the user message holding it ({holders[0].id})" in row.why
