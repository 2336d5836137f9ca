"""A server over its memory limit drops the traces it holds before it reads a new one (``studio/residency.py``), and
the Traces page does not read a big file just to list it (``listing_services.listed``)."""
from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import streamlit as st

from agent_core.trace.synthetic import synthetic_trace
from agent_core.trace.writer import write_trace
from studio import listing_services, residency, services


def _trace_file(path: Path, calls: int) -> Path:
    """A trace of ``calls`` calls over 1 MB (the path of big files: hashed once, parse cached) no test opened."""
    trace = synthetic_trace(calls)
    trace.meta["run"] = uuid.uuid4().hex
    trace.meta["padding"] = "x" * 1_100_000
    path.parent.mkdir(parents=True, exist_ok=True)
    write_trace(trace, path)
    return path


def _calls_in(path: Path) -> int:
    """The file's call events, read with json alone."""
    return sum(json.loads(line).get("type") == "call" for line in path.read_text(encoding="utf-8").splitlines())


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """The file names the studio reads from disk, in order."""
    seen: list[str] = []
    real = services._importers.load_any
    monkeypatch.setattr(services._importers, "load_any",
                        lambda path, *a, **k: seen.append(Path(path).name) or real(path, *a, **k))
    return seen


@pytest.fixture
def fresh(monkeypatch):
    """Residency's own state, empty; and files over 1 MB count as big ones (the Traces page does not read them)."""
    monkeypatch.setattr(listing_services, "LISTED_BYTES", 1_000_000)
    monkeypatch.setattr(residency, "_resident", {})
    monkeypatch.setattr(residency, "_files", {})
    monkeypatch.setattr(residency, "_users", 0)
    monkeypatch.setattr(residency, "_sweeps_due", 0)       # no sweep timers left behind for later tests
    monkeypatch.setattr(residency, "_sweep_armed", False)


def _keys() -> dict[str, str]:
    return {s.label: s.key for s in services.builtin_sources()}


def test_admit_drops_only_over_the_limit_beside_two_large_traces_and_when_nothing_else_holds_one(monkeypatch, fresh):
    dropped: list[int] = []
    monkeypatch.setattr(residency, "_hooks", [lambda: dropped.append(residency.epoch())])
    monkeypatch.setenv(residency.LIMIT_ENV, "0")
    residency.parsed("a", 2_000_000)
    residency.parsed("sample", 20_000)
    with residency.in_use():
        assert not residency.admit("b")             # one large trace in memory: a second one is read beside it
    residency.parsed("b", 2_000_000)
    monkeypatch.setenv(residency.LIMIT_ENV, "1000000")
    with residency.in_use():
        assert not residency.admit("c")             # two, but under the limit
    monkeypatch.setenv(residency.LIMIT_ENV, "0")
    with residency.in_use():
        assert not residency.admit("a")             # in memory already
    residency.hold()                                # a background job holds a trace
    try:
        with residency.in_use():
            assert not residency.admit("c")
    finally:
        residency.release()
    with residency.in_use():
        residency.admit("a")
        assert not residency.admit("c")             # this run holds "a" (the Compare page's left trace)
    before = residency.epoch()
    with residency.in_use():
        assert residency.admit("c")
    assert dropped == [before + 1] and residency.epoch() == before + 1
    assert residency._resident == {}
    with residency.in_use():
        assert not residency.admit("d")             # nothing in memory any more: nothing to drop


def test_a_third_large_trace_over_the_limit_drops_the_others_and_each_page_shows_its_own_trace(
        open_studio, tmp_path, monkeypatch, reads, fresh):
    a = _trace_file(tmp_path / "traces" / "a.jsonl", 12)
    b = _trace_file(tmp_path / "traces" / "b.jsonl", 7)
    c = _trace_file(tmp_path / "traces" / "c.jsonl", 9)
    monkeypatch.setenv(residency.LIMIT_ENV, "0")
    at = open_studio(a, "screens/timeline.py")
    assert at.metric[0].value == str(_calls_in(a)) == "12"
    keys = _keys()
    for name, calls in (("b.jsonl", "7"), ("a.jsonl", "12"), ("c.jsonl", "9"), ("a.jsonl", "12"), ("b.jsonl", "7")):
        at.session_state["open_trace"] = keys[name]
        at.run()
        assert not at.exception and at.metric[0].value == calls
    assert _calls_in(b) == 7 and _calls_in(c) == 9
    # a and b side by side; c dropped both; a read again beside c; b again: beside two large ones, it drops them
    assert reads == ["a.jsonl", "b.jsonl", "c.jsonl", "a.jsonl", "b.jsonl"]
    for page in ("screens/tokens.py", "screens/replay.py", "screens/lint.py", "screens/traces.py"):
        at.switch_page(page).run()
        assert not at.exception, (page, [e.message for e in at.exception])
    at.session_state["open_trace"] = keys["a.jsonl"]
    at.switch_page("screens/timeline.py").run()
    assert not at.exception and at.metric[0].value == "12"
    assert reads == ["a.jsonl", "b.jsonl", "c.jsonl", "a.jsonl", "b.jsonl", "a.jsonl"]      # b dropped a and c


def test_the_compare_page_reads_its_second_trace_beside_the_first_whatever_the_limit(
        open_studio, tmp_path, monkeypatch, reads, fresh):
    a = _trace_file(tmp_path / "traces" / "a.jsonl", 12)
    b = _trace_file(tmp_path / "traces" / "b.jsonl", 7)
    _trace_file(tmp_path / "traces" / "c.jsonl", 9)
    monkeypatch.setenv(residency.LIMIT_ENV, "0")
    at = open_studio(a, "screens/timeline.py")
    keys = _keys()
    for name in ("b.jsonl", "c.jsonl", "b.jsonl"):      # c drops a and b; b is read again beside c
        at.session_state["open_trace"] = keys[name]
        at.run()
    assert reads == ["a.jsonl", "b.jsonl", "c.jsonl", "b.jsonl"]
    at.session_state["compare_right"] = keys["a.jsonl"]
    at.switch_page("screens/compare.py").run()
    assert not at.exception, [e.message for e in at.exception]
    assert [m.value for m in at.metric][:2] == [str(_calls_in(b)), str(_calls_in(a))] == ["7", "12"]
    # a, read beside two large traces over the limit, drops nothing: this run holds b
    assert reads == ["a.jsonl", "b.jsonl", "c.jsonl", "b.jsonl", "a.jsonl"]
    at.run()
    assert not at.exception and reads == ["a.jsonl", "b.jsonl", "c.jsonl", "b.jsonl", "a.jsonl"]


def test_under_the_limit_a_trace_opened_again_is_not_read_again(open_studio, tmp_path, monkeypatch, reads, fresh):
    a = _trace_file(tmp_path / "traces" / "a.jsonl", 5)
    _trace_file(tmp_path / "traces" / "b.jsonl", 4)
    monkeypatch.setenv(residency.LIMIT_ENV, "1000000")
    at = open_studio(a, "screens/timeline.py")
    keys = _keys()
    for name in ("b.jsonl", "a.jsonl", "b.jsonl"):
        at.session_state["open_trace"] = keys[name]
        at.run()
        assert not at.exception
    assert reads == ["a.jsonl", "b.jsonl"]


def test_the_traces_page_lists_a_big_file_unread_then_with_the_summary_it_stored(
        open_studio, tmp_path, monkeypatch, reads, fresh):
    big = _trace_file(tmp_path / "traces" / "big.jsonl", 9)
    at = open_studio(None)
    assert not at.exception
    assert reads == []
    assert [c.value for c in at.caption if "not read yet" in c.value] == ["1.1 MB, not read yet: open it to read it"]
    at.session_state["open_trace"] = _keys()["big.jsonl"]
    at.run()
    assert not at.exception and reads == ["big.jsonl"]
    assert at.metric[0].value == str(_calls_in(big)) == "9"       # the open trace's summary, stored too
    # a new server: nothing in memory; the row shows the stored summary without reading the file
    st.cache_resource.clear()
    monkeypatch.setattr(residency, "_resident", {})
    monkeypatch.setattr(residency, "_files", {})
    at = open_studio(None)
    assert not at.exception and reads == ["big.jsonl"]
    assert not [c for c in at.caption if "not read yet" in c.value]
    row = [t.value for t in at.text]
    assert "big.jsonl" in row and row[row.index("big.jsonl") + 1] == "9"
    # the file changed: its stored summary is another version's
    big.write_text(big.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    at.run()
    assert [c.value for c in at.caption if "not read yet" in c.value] == ["1.1 MB, not read yet: open it to read it"]


def test_a_background_job_holds_its_trace_from_queued_to_done(fresh):
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    from studio import warmup

    gate = threading.Event()
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        submit = warmup._submitter(pool, None)
        running = submit(gate.wait, 30)
        queued = submit(lambda: None)
        assert residency._users == 2
        assert queued.cancel() and residency._users == 1       # cancelled before it ran: released all the same
        gate.set()
        assert running.result(30)
        deadline = time.monotonic() + 5
        while residency._users and time.monotonic() < deadline:      # done callbacks run just after the result
            time.sleep(0.01)
        assert residency._users == 0
    finally:
        gate.set()
        pool.shutdown()


def test_after_an_eviction_a_sweep_frees_frozen_cyclic_garbage_that_held_a_trace(monkeypatch, fresh):
    import gc
    import weakref

    class Held:         # stands for a dropped page's names: a cycle (a dict and its functions) holding a trace
        pass

    held = Held()
    alive = weakref.ref(held)
    names: dict = {"loaded": held}
    names["self"] = names
    gc.freeze()                         # frozen by a later big parse, as opening._freeze does
    del names, held
    gc.collect()
    assert alive() is not None          # frozen garbage is never collected ...
    monkeypatch.setattr(residency, "_sweeps_due", 1)
    residency._sweep()                  # ... until a sweep thaws it
    assert alive() is None and residency._sweeps_due == 0
