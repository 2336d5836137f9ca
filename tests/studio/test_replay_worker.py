"""A big trace's Replay page, first visit, is computed by a worker process and read back (studio/replay_worker.py).

The worker runs for real (``python -m studio.replay_worker``, a subprocess). What the page then shows is checked
against the replay engine run here (``agent_core.replay.engine.replay`` with the policies' own classes and the
retention of ``agent_core.replay.probes``), not against the worker's code; and the page must not replay anything
itself when the worker's view is there, but must when it is damaged, mis-shaped or the worker failed."""
from __future__ import annotations

import gc
import hashlib
import subprocess
import sys

import pytest
import streamlit as st
from conftest import APP, plotly_spec
from streamlit.testing.v1 import AppTest

from agent_core.core.paths import PROJECT_ROOT, SAMPLE_TRACES
from agent_core.replay.engine import chat_calls, replay
from agent_core.replay.probes import probe_from_text, recorded_retention
from agent_core.trace.reader import read_trace
from agent_core.trim.budget import TokenBudget
from agent_core.trim.window import MaxMessages
from studio import replay_services as rs
from studio import replay_worker, token_worker, view_store, warmup
from studio.viewmodels import replay_first

LONG = SAMPLE_TRACES / "long_trimmed_fact.jsonl"
OTHER = SAMPLE_TRACES / "naive_trim_orphan.jsonl"
FACT = "A-2024-0715"


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def store(tmp_path, monkeypatch):
    """An empty token store and view store (the worker inherits the variable), and no worker of other tests."""
    monkeypatch.setenv("CHAIN_STUDIO_TOKEN_CACHE", str(tmp_path / "tokens"))
    monkeypatch.delenv(view_store.ENV, raising=False)
    monkeypatch.setattr(replay_worker, "_jobs", {})
    monkeypatch.setattr(replay_worker, "_views", {})
    monkeypatch.setattr(token_worker, "_jobs", {})
    return tmp_path / "tokens" / "views"


def _run_worker(path, digest: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "studio.replay_worker", str(path), digest, "--profile", "openai"],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120, check=False)


def test_the_worker_round_trip(store):
    digest = _digest(LONG)
    done = _run_worker(LONG, digest)
    assert done.returncode == 0, done.stderr
    view = replay_worker.stored_view(digest, "openai", 2)
    assert view is not None
    trace = read_trace(LONG)
    engine = [replay(trace, MaxMessages(40)), replay(trace, TokenBudget(8000))]
    assert [c["tokens"] for c in view.columns] == [r.totals["tokens"] for r in engine]
    assert [c["recorded_tokens"] for c in view.columns] == [engine[0].totals["recorded_tokens"]] * 2
    assert [c["rejected"] for c in view.columns] == [r.totals["rejected"] for r in engine]
    calls = [c.index for c in chat_calls(trace)]
    assert view.indexes == calls and view.call == calls[-1]
    assert [d["tokens"] for d in view.detail] == [r.calls[-1].tokens for r in engine]
    gone = recorded_retention(trace, [probe_from_text(FACT)]).rows[0].first_gone
    hm = view.heatmap
    assert hm["labels"][0] == f"recorded · {FACT}" and hm["x"] == calls
    assert hm["z"][0][calls.index(gone)] == 0 and hm["z"][0][calls.index(gone) - 1] == 1
    for lang in replay_worker.LANGS:
        assert view.story_list(lang)
    # a worker pointed at another file than the digest it was given stores nothing, says why on one line
    bad = _run_worker(OTHER, digest.replace(digest[0], "0" if digest[0] != "0" else "1", 1))
    assert bad.returncode == 1 and "changed since the studio opened it" in bad.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("stored", [None, {"columns": []}, "damaged"])
def test_a_damaged_or_misshaped_view_is_never_trusted(store, stored):
    digest = _digest(LONG)
    assert _run_worker(LONG, digest).returncode == 0
    good = view_store.load(replay_worker.KIND, digest, replay_worker._slot("openai"))
    assert replay_first.parse(good, 2) is not None
    assert replay_first.parse(good, 3) is None                        # another number of columns
    if stored == "damaged":
        [path] = list(store.glob("replay-first-*.json"))
        data = path.read_bytes()
        path.write_bytes(data[:-10] + b"0" * 10)                     # its sha256 no longer matches
    else:
        bent = dict(good, chart=dict(good["chart"], recorded=[[0], []])) if stored is None else stored
        assert replay_worker.save_view(digest, "openai", bent)
    assert replay_worker.stored_view(digest, "openai", 2) is None


def _loads(monkeypatch) -> list:
    """Every read of a stored view from the view store, from here on."""
    read: list = []
    real = view_store.load
    monkeypatch.setattr(view_store, "load", lambda *a: read.append(a[0]) or real(*a))
    return read


def test_a_stored_view_is_read_and_checked_once_until_the_traces_are_dropped(store, monkeypatch):
    digest = _digest(LONG)
    assert _run_worker(LONG, digest).returncode == 0
    read = _loads(monkeypatch)
    first = replay_worker.stored_view(digest, "openai", 2)
    assert first is not None and replay_worker.stored_view(digest, "openai", 2) is first
    assert replay_worker.stored_view(digest, "openai", 3) is None        # another shape: read, and refused
    assert read == [replay_worker.KIND] * 2
    replay_worker.forget_views()
    assert replay_worker.stored_view(digest, "openai", 2) is not None and len(read) == 3


def test_the_first_view_is_read_ahead_once_stored(store, monkeypatch):
    """After a page run of a big trace whose view a worker computes or has stored, the view is read into the server
    in the background once stored, once, and the page's first visit reads nothing; not for a small trace."""
    from studio import opening, services

    monkeypatch.setattr(warmup, "_started", set())
    trace = read_trace(LONG)
    loaded = services.Loaded(None, _digest(LONG), trace)
    monkeypatch.setattr(opening, "BIG_CALLS", 1)
    assert warmup.first_view_ahead(loaded, "openai") is None             # nothing stored, no worker
    assert _run_worker(LONG, loaded.digest).returncode == 0
    monkeypatch.setattr(opening, "BIG_CALLS", len(trace.calls) + 1)
    assert warmup.first_view_ahead(loaded, "openai") is None             # a small trace
    monkeypatch.setattr(opening, "BIG_CALLS", 1)
    monkeypatch.setattr(warmup, "DRAWN_S", 0.0)
    read = _loads(monkeypatch)
    thread = warmup.first_view_ahead(loaded, "openai")
    assert thread is not None and warmup.first_view_ahead(loaded, "openai") is None
    thread.join(30)
    assert read == [replay_worker.KIND]
    assert replay_worker.view(loaded.digest, "openai", len(rs.default_specs())) is not None and len(read) == 1


def test_a_first_view_still_computed_is_read_ahead_when_the_worker_is_done(store, monkeypatch):
    from studio import opening, services

    monkeypatch.setattr(warmup, "_started", set())
    monkeypatch.setattr(opening, "BIG_CALLS", 1)
    monkeypatch.setattr(warmup, "DRAWN_S", 0.0)
    loaded = services.Loaded(None, _digest(LONG), read_trace(LONG))
    counting = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2)"])     # the token worker
    try:
        assert replay_worker.start(loaded.digest, str(LONG), "openai", counting.pid)
        read = _loads(monkeypatch)
        thread = warmup.first_view_ahead(loaded, "openai")
        assert thread is not None and replay_worker.running(loaded.digest, "openai")
        thread.join(60)
        assert not thread.is_alive() and read == [replay_worker.KIND]
        assert replay_worker.stored_view(loaded.digest, "openai", len(rs.default_specs())) is not None
        assert read == [replay_worker.KIND]
    finally:
        counting.kill()
        counting.wait()
        replay_worker.wait(loaded.digest, "openai")


@pytest.fixture
def big(monkeypatch, store):
    """The sample stands in for a 25,000-call trace: its first open starts the replay worker. Every replay of
    the server process is counted."""
    st.cache_resource.clear()
    st.cache_data.clear()
    monkeypatch.setattr(warmup, "_started", set())
    monkeypatch.setattr(warmup, "_shown_ahead", set())
    monkeypatch.setattr(warmup, "WARM_CALLS", 1)
    monkeypatch.setattr(warmup, "IDLE_S", 60)            # the thread's part (the Tokens page's views) not now
    rs._KEPT.clear()
    monkeypatch.setattr(rs, "_WARM", {})
    monkeypatch.setenv("CHAIN_STUDIO_OPEN", str(LONG))
    runs: list = []
    real = rs._run
    monkeypatch.setattr(rs, "_run", lambda trace, s, pricing, profile: runs.append(s.name) or
                        real(trace, s, pricing, profile))

    def open_first(page: str) -> AppTest:
        at = AppTest.from_file(str(APP), default_timeout=120)
        at.switch_page(page).run()
        assert not at.exception, [e.message for e in at.exception]
        return at
    yield open_first, runs
    warmup.page_started()
    for job in replay_worker._jobs.values():
        if job.proc is not None:
            job.proc.kill()
            job.proc.wait()
    gc.unfreeze()       # the first open froze this process's objects out of the GC


def test_the_replay_page_shows_the_worker_view_without_replaying(big):
    open_first, runs = big
    at = open_first("screens/timeline.py")
    digest = _digest(LONG)
    assert list(replay_worker._jobs) == [(digest, "openai")]
    at.switch_page("screens/replay.py").run()       # waits for the worker
    assert not at.exception, [e.message for e in at.exception]
    assert replay_worker.failure(digest, "openai") is None
    assert runs == [], "the page replayed the trace itself"
    trace = read_trace(LONG)
    budget = replay(trace, TokenBudget(8000))
    assert at.metric[0].value == f"{budget.totals['recorded_tokens']:,}"
    assert at.metric[3].value == f"{budget.totals['tokens']:,}"
    heat = plotly_spec(at, 1)["data"][0]
    assert heat["y"][0] == f"recorded · {FACT}" and not at.warning
    # anything else is replayed on demand: another call of the picker
    at.selectbox(key="replay_call").set_value(view_call := next(c.index for c in chat_calls(trace))).run()
    assert not at.exception and sorted(runs) == ["max-messages", "token-budget"]
    assert any(t.value.startswith(f"{len(budget.call(view_call).messages)} messages")
               for t in at.caption), [t.value for t in at.caption]


def test_a_failed_worker_is_said_on_the_replay_page(big):
    open_first, runs = big
    digest = _digest(LONG)
    # the worker of this digest is pointed at another file: it refuses it and stores nothing
    assert replay_worker.start(digest, str(OTHER), "openai")
    assert replay_worker.wait(digest, "openai", 60)
    at = open_first("screens/replay.py")
    [warning] = [w.value for w in at.warning]
    assert warning.startswith("The background replay failed, so this page replays the trace itself: ")
    assert "changed since the studio opened it" in warning
    assert sorted(runs) == ["max-messages", "token-budget"]             # replayed in the page
    recorded_total = replay(read_trace(LONG), MaxMessages(40)).totals["recorded_tokens"]
    assert at.metric[0].value == f"{recorded_total:,}"


def test_the_worker_replays_only_once_the_token_worker_has_exited(store):
    """Its replays read the per-text counts the token worker flushes at its exit (``--after PID``); it looks for
    the token worker's series under that worker's own kind."""
    import time

    assert replay_worker.SERIES_KIND == token_worker.KIND

    digest = _digest(LONG)
    counting = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(4)"])
    worker = subprocess.Popen([sys.executable, "-m", "studio.replay_worker", str(LONG), digest, "--profile", "openai",
                               "--after", str(counting.pid)], cwd=PROJECT_ROOT, stderr=subprocess.PIPE)
    try:
        time.sleep(3)
        assert worker.poll() is None and not replay_worker.is_stored(digest, "openai")
        counting.wait()
        assert worker.wait(60) == 0, worker.stderr.read()
        assert replay_worker.stored_view(digest, "openai", 2) is not None
    finally:
        for p in (counting, worker):
            p.kill()
            p.wait()


def test_the_bar_while_a_child_computes_the_first_view():
    names = ["max-messages", "token-budget"]
    counting, replaying = replay_first.COUNTING, replay_first.REPLAYING
    steps = [(replay_first.PREPARING, 0, 0), (counting, 0, 50_001), (counting, 25_000, 50_001),
             (counting, 50_001, 50_001), (replay_first.PROBING, 0, 0), (replaying, 0, 2), (replaying, 1, 2),
             (replay_first.VIEW, 0, 0)]
    bars = [replay_first.progress(*step, 25_000, names) for step in steps]
    shares = [b[0] for b in bars]
    assert shares == sorted(shares) and 0 <= shares[0] and shares[-1] < 1
    assert bars[2][1] == "Counting the tokens of 50,001 messages for the replays: 50% …"
    assert bars[4][1] == "Finding the facts to follow and what the recorded payloads kept of them …"
    assert bars[6][1] == "Replaying 25,000 calls under token-budget (2 of 2) …"
    assert bars[6][2] == "正在按 token-budget 重放 25,000 次调用（2 / 2）…"
    assert bars[0][1] == "Preparing the replay of 25,000 calls in a background process …"
    # a torn read (a column number past the list, a total of 0) still draws a bar
    assert replay_first.progress(replay_first.REPLAYING, 5, 2, 10, names)[1].startswith("Preparing")
    assert replay_first.progress(replay_first.COUNTING, 3, 0, 10, names)[0] == shares[1]


def test_after_the_page_shows_the_worker_view_its_columns_are_replayed_in_the_background(big, monkeypatch):
    """Another call of the Replay page reads the replays themselves; when the page was drawn from the worker's view,
    the server replays its columns once the pages are quiet, and the next call step replays nothing."""
    import time

    open_first, runs = big
    at = open_first("screens/timeline.py")
    digest = _digest(LONG)
    assert replay_worker.wait(digest, "openai", 120) is None
    monkeypatch.setattr(warmup, "IDLE_S", 0.1)
    at.switch_page("screens/replay.py").run()
    assert not at.exception and runs == []         # drawn from the worker's view
    deadline = time.monotonic() + 60
    while len(runs) < 2 and time.monotonic() < deadline:     # the quiet moment's warm-up, on its thread
        time.sleep(0.1)
    assert sorted(runs) == ["max-messages", "token-budget"]
    for future in list(rs._WARM.values()):
        future.result(60)
    trace = read_trace(LONG)
    other = next(c.index for c in chat_calls(trace))
    at.selectbox(key="replay_call").set_value(other).run()
    assert not at.exception and sorted(runs) == ["max-messages", "token-budget"]     # nothing replayed again
    budget = replay(trace, TokenBudget(8000))
    assert any(t.value.startswith(f"{len(budget.call(other).messages)} messages") for t in at.caption)
