"""The Timeline counts the prompt tokens of the table rows it shows, not the whole trace (studio/estimate_services.py).

Expected counts come from the counter's cookbook formula on each call's own messages and tools
(``count_payload``), not from the series code under test."""
from __future__ import annotations

import hashlib
import uuid

from conftest import APP
from streamlit.testing.v1 import AppTest

from agent_core.core.paths import SAMPLE_TRACES
from agent_core.trace.reader import read_trace
from agent_core.trace.synthetic import synthetic_trace
from agent_core.trace.tokens import counter_for
from agent_core.trace.writer import write_trace
from studio import estimate_services, opening, services, token_worker, warmup
from studio.viewmodels import timeline as timeline_vm
from studio.viewmodels import tokens as tokens_vm


def _exact(call) -> int:
    return counter_for(call.model).count_payload(call.messages, call.tools)


def test_a_page_of_calls_is_counted_like_each_whole_payload(tmp_path):
    path = tmp_path / "t.jsonl"
    write_trace(synthetic_trace(60), path)
    trace = read_trace(path)                     # read from a file: payloads shared as runs, like the studio's
    for calls in ([trace.calls[i] for i in range(40, 60)], [trace.calls[i] for i in (3, 17, 18, 51)]):
        assert timeline_vm.page_estimates(calls) == {c.index: _exact(c) for c in calls}
        whole = {t.call: t.estimated for t in tokens_vm.token_series(trace)}
        assert {c.index: whole[c.index] for c in calls} == {c.index: _exact(c) for c in calls}


def test_responses_calls_need_the_whole_series():
    trace = read_trace(SAMPLE_TRACES / "responses_previous_id.jsonl")
    assert timeline_vm.needs_whole_series(trace, [c.index for c in trace.calls])
    classic = read_trace(SAMPLE_TRACES / "classic_remembers.jsonl")
    assert not timeline_vm.needs_whole_series(classic, [c.index for c in classic.calls])


def test_page_rows_fill_the_estimates_and_mark_the_selected_call():
    rows = [{"call": 4, "estimated": None}, {"call": 5, "estimated": None}]
    assert timeline_vm.page_rows(rows, {4: 10, 5: 12}, 5) == [{"call": 4, "estimated": 10, "at": ""},
                                                             {"call": 5, "estimated": 12, "at": "▶"}]


def _timeline_first(path, monkeypatch) -> AppTest:
    """The studio opened straight on /timeline (as a deep link does): the Traces page's card, which sums the
    whole series, never runs."""
    monkeypatch.setenv("CHAIN_STUDIO_OPEN", str(path))
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.switch_page("screens/timeline.py").run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_a_big_timeline_counts_only_its_rows_and_the_tokens_page_gets_the_rest(tmp_path, monkeypatch):
    trace = synthetic_trace(45)
    trace.meta["run"] = uuid.uuid4().hex            # a digest no earlier test has opened
    path = tmp_path / "big.jsonl"
    write_trace(trace, path)
    monkeypatch.setattr(opening, "BIG_CALLS", 30)
    monkeypatch.setattr(warmup, "WARM_CALLS", 10_000)       # no replays in the background here
    whole: list = []
    real = tokens_vm.token_series
    monkeypatch.setattr(services._tokens, "token_series", lambda t: whole.append(len(t.calls)) or real(t))
    started: list = []
    monkeypatch.setattr(warmup, "count_ahead", lambda loaded: started.append(loaded.digest))   # counted below
    at = _timeline_first(path, monkeypatch)
    assert len(started) == 1
    assert whole == [], "the Timeline counted the whole trace"
    assert [m.label for m in at.metric] == ["Calls", "Failed calls", "Findings"]
    table = at.dataframe[0].value
    written = read_trace(path)
    assert list(table["estimated"]) == [_exact(written.calls[c]) for c in table["call"]]
    at.number_input(key="call_input").set_value(40).run()      # the last page: counted on its own
    table = at.dataframe[0].value
    assert 40 in list(table["call"]) and whole == []
    assert list(table["estimated"]) == [_exact(written.calls[c]) for c in table["call"]]
    at.switch_page("screens/tokens.py").run()                    # the Tokens page needs the whole series
    assert not at.exception and whole == [45]
    total = sum(_exact(c) for c in written.calls)
    assert {m.label: m.value for m in at.metric}["Prompt tokens (est.)"] == f"{total:,}"
    loaded = services.Loaded(None, started[0], written)      # the digest and trace are all it reads
    assert opening.counted(started[0])
    assert estimate_services.row_estimates(loaded, [0, 44]) == {0: _exact(written.calls[0]),
                                                                44: _exact(written.calls[44])}


def test_count_ahead_counts_the_series_in_a_worker_process_then_pages_read_it(tmp_path, monkeypatch):
    trace = synthetic_trace(35)
    trace.meta["run"] = uuid.uuid4().hex
    path = tmp_path / "big.jsonl"
    write_trace(trace, path)
    monkeypatch.setattr(opening, "BIG_CALLS", 30)
    monkeypatch.setattr(warmup, "WARM_CALLS", 10_000)
    futures: list = []
    real = warmup.count_ahead
    monkeypatch.setattr(warmup, "count_ahead", lambda loaded: futures.append(real(loaded)))
    monkeypatch.setattr(token_worker, "_jobs", {})
    at = _timeline_first(path, monkeypatch)
    at.run()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert futures and not any(futures), futures        # no thread: a process (studio/token_worker.py)
    assert list(token_worker._jobs) == [digest]          # once per trace
    assert token_worker.wait(digest, 60) is None and token_worker.done(digest)
    pages: list = []
    monkeypatch.setattr(timeline_vm, "page_estimates", lambda calls: pages.append(calls) or {})
    at.number_input(key="call_input").set_value(34).run()
    assert not at.exception and pages == []             # read from the series, not counted again
    table = at.dataframe[0].value
    written = read_trace(path)
    assert list(table["estimated"]) == [_exact(written.calls[c]) for c in table["call"]]



def test_the_count_does_not_hold_up_the_replay_warm_up(monkeypatch):
    """The replays of the warm-up start after a quiet moment whether or not the background count has ended
    (queued behind it they started seconds late)."""
    import threading

    monkeypatch.setattr(opening, "BIG_CALLS", 1)
    release = threading.Event()
    monkeypatch.setattr(services, "token_series", lambda loaded: release.wait(30))
    trace = synthetic_trace(3)
    loaded = services.Loaded(None, uuid.uuid4().hex, trace)
    counting = warmup.count_ahead(loaded)
    assert counting is not None and warmup.count_ahead(loaded) is None      # once per trace
    other = warmup._executor().submit(lambda: "replays")
    assert other.result(10) == "replays" and not counting.done()
    release.set()
    counting.result(10)
