"""A big trace's Tokens and Replay pages are computed ahead, in the background, and the pages take the results
(studio/warmup.py).

The warm-up must replay exactly what the Replay page's first visit asks for (same policies, parameters, price
and profile), or the page would replay again: counted here by the calls to ``replay_services._run``; likewise
the Tokens page's heaviest messages. The figures the page then shows are checked against the real replay
engine, not against the warm-up."""
from __future__ import annotations

import streamlit as st

from agent_core.core.paths import SAMPLE_TRACES
from agent_core.replay.engine import replay
from agent_core.trace.reader import read_trace
from agent_core.trim.window import MaxMessages
from studio import replay_services as rs
from studio import warmup

LONG = SAMPLE_TRACES / "long_trimmed_fact.jsonl"


def _fresh(monkeypatch) -> list:
    """Empty caches (other tests replayed the samples in this process) and count every replay run. The view
    store is off: a file's Replay page is computed ahead by a worker process otherwise (test_replay_worker.py),
    this thread is the way of bytes in the session, a redacted view and a server without the view store."""
    from studio import view_store

    monkeypatch.setenv(view_store.ENV, "off")
    st.cache_resource.clear()
    st.cache_data.clear()
    rs._KEPT.clear()
    monkeypatch.setattr(rs, "_WARM", {})
    monkeypatch.setattr(warmup, "_started", set())
    monkeypatch.setattr(warmup, "_shown_ahead", set())
    monkeypatch.setattr(warmup, "IDLE_S", 0.2)
    runs: list = []
    real = rs._run

    def counted(trace, s, pricing, profile):
        runs.append(s.name)
        return real(trace, s, pricing, profile)
    monkeypatch.setattr(rs, "_run", counted)
    return runs


def test_the_pages_take_what_was_computed_ahead(open_studio, monkeypatch):
    from studio import services

    runs = _fresh(monkeypatch)
    largest: list = []
    real = services._tokens.largest_messages
    monkeypatch.setattr(services._tokens, "largest_messages", lambda *a: largest.append(a) or real(*a))
    indexes: list = []

    class Index(services._search.SearchIndex):
        def __init__(self, trace) -> None:
            indexes.append(trace)
            super().__init__(trace)
    monkeypatch.setattr(services._search, "SearchIndex", Index)
    monkeypatch.setattr(warmup, "WARM_CALLS", 1)     # the sample stands in for a 25,000-call trace
    at = open_studio(LONG, "screens/timeline.py")
    warmup.wait(60)
    assert sorted(runs) == ["max-messages", "token-budget"], runs     # in the background, after the page
    assert len(largest) == 1 and len(indexes) == 1
    at.text_input(key="timeline_search").input("A-2024-0715").run()
    assert not at.exception and len(indexes) == 1                      # the search took the index built ahead
    assert any("0–19" in t.value for t in at.text)
    at.switch_page("screens/tokens.py").run()
    assert not at.exception and len(largest) == 1                     # the Tokens page took it
    assert all(f.done() for f in rs._WARM.values()) and len(rs._WARM) == 2
    at.switch_page("screens/replay.py").run()
    assert not at.exception, [e.message for e in at.exception]
    assert sorted(runs) == ["max-messages", "token-budget"], runs     # the page replayed nothing again
    assert rs._WARM == {}                                               # it took both
    recorded_total = replay(read_trace(LONG), MaxMessages(40)).totals["recorded_tokens"]
    assert at.metric[0].label == "Prompt tokens" and at.metric[0].value == f"{recorded_total:,}"
    # another policy than the defaults is replayed by the page itself, as before
    at.selectbox(key="replay_policy_1").set_value("naive-drop-oldest").run()
    assert not at.exception and runs[-1] == "naive-drop-oldest" and len(runs) == 3


def test_a_small_trace_is_not_replayed_ahead(open_studio, monkeypatch):
    runs = _fresh(monkeypatch)
    open_studio(LONG, "screens/timeline.py")        # far below WARM_CALLS
    warmup.wait(60)
    assert runs == [] and rs._WARM == {}


def test_the_warm_up_waits_until_no_page_has_run_for_a_while(open_studio, monkeypatch):
    import time

    runs = _fresh(monkeypatch)
    monkeypatch.setattr(warmup, "WARM_CALLS", 1)
    monkeypatch.setattr(warmup, "IDLE_S", 0.5)
    at = open_studio(LONG, "screens/timeline.py")
    assert runs == [] and rs._WARM == {}            # armed, not started: the page is still being delivered
    warmup.page_started()                           # another page run: the warm-up waits again
    time.sleep(0.8)
    assert runs == [] and rs._WARM == {}
    at.run()
    warmup.wait(60)
    assert sorted(runs) == ["max-messages", "token-budget"], runs
