"""A big trace's token series is counted by a worker process and kept whole on disk (studio/token_worker.py).

The worker runs for real (``python -m studio.token_worker``, a subprocess); the counts it stores are checked
against tiktoken's count of each whole request (``TokenCounter.count_payload``: the cookbook formula over the
messages and tool definitions), not against the series code the worker runs."""
from __future__ import annotations

import gc
import hashlib
import os
import signal
import subprocess
import sys
import time

import pytest
import streamlit as st
from conftest import APP
from streamlit.testing.v1 import AppTest

from agent_core.core.paths import PROJECT_ROOT, SAMPLE_TRACES
from agent_core.trace.reader import read_trace
from agent_core.trace.tokens import counter_for
from studio import opening, token_worker, view_store, warmup
from studio.viewmodels import tokens as tokens_vm

LONG = SAMPLE_TRACES / "long_trimmed_fact.jsonl"
OTHER = SAMPLE_TRACES / "naive_trim_orphan.jsonl"


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _whole_requests(path) -> list[int]:
    trace = read_trace(path)
    return [counter_for(c.model).count_payload(c.messages, c.tools) for c in trace.calls]


@pytest.fixture
def store(tmp_path, monkeypatch):
    """An empty token store and view store (the worker inherits the variable), and no worker of other tests."""
    monkeypatch.setenv("CHAIN_STUDIO_TOKEN_CACHE", str(tmp_path / "tokens"))
    monkeypatch.delenv(view_store.ENV, raising=False)
    monkeypatch.setattr(token_worker, "_jobs", {})
    return tmp_path / "tokens" / "views"


def _run_worker(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "studio.token_worker", *args], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=120, check=False)


def test_the_worker_process_stores_the_whole_series(store):
    done = _run_worker(str(LONG), _digest(LONG))
    assert done.returncode == 0, done.stderr
    series = token_worker.stored(_digest(LONG), len(read_trace(LONG).calls))
    assert series is not None
    assert [t.call for t in series] == list(range(len(series)))
    assert [t.estimated for t in series] == _whole_requests(LONG)
    assert all(sum(t.by_role.values()) == t.estimated for t in series)
    assert token_worker.stored(_digest(LONG), len(series) + 1) is None      # another trace's call count: not it
    # the Tokens page's heaviest messages and sampled-text count, stored beside it
    trace = read_trace(LONG)
    never = lambda *a: pytest.fail("computed in this process")
    largest = token_worker.page_view(_digest(LONG), trace, "largest", 10, never)
    assert largest == tokens_vm.largest_messages(trace, 10) and largest
    assert largest[0].tokens == counter_for(trace.calls[largest[0].first_call].model).count_message(
        trace.calls[largest[0].first_call].messages[largest[0].index])
    assert token_worker.page_view(_digest(LONG), trace, "sampled", 0, never) == 0
    assert token_worker.page_view(_digest(LONG), trace, "largest", 3, lambda t, n: "here") == "here"   # not stored


def test_a_file_that_is_not_the_one_opened_is_not_counted(store):
    done = _run_worker(str(OTHER), _digest(LONG))
    assert done.returncode == 1
    said = f"{OTHER.name} changed since the studio opened it: its tokens were not counted."
    assert done.stderr.strip().splitlines() == [said]
    assert not store.exists() or not list(store.glob("*.json"))


@pytest.mark.parametrize("rows", [
    [], [[0, {"user": 5}, 5, None, None, 128000]] * 2,                      # too few / calls out of order
    [[0, {"user": "5"}, 5, None, None, 128000]], [[0, {"user": 5}, 5, None, None]], {"0": []},
])
def test_a_stored_series_of_another_shape_is_never_trusted(rows):
    assert token_worker.series_of(rows, 1 if len(rows) < 2 else 2) is None


def test_a_damaged_series_file_is_counted_again(store):
    digest = _digest(LONG)
    assert _run_worker(str(LONG), digest).returncode == 0
    [path] = [p for p in store.glob("tokens-*.json")
              if not p.name.startswith((f"{token_worker.PAGE_KIND}-", f"{token_worker.HEAD_KIND}-"))]
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x01
    path.write_bytes(bytes(data))
    trace = read_trace(LONG)
    assert token_worker.stored(digest, len(trace.calls)) is None and not path.exists()
    series = token_worker.series(digest, trace, keep=True)        # counted here, and stored again
    assert [t.estimated for t in series] == _whole_requests(LONG)
    assert token_worker.stored(digest, len(trace.calls)) == series


def test_the_worker_exits_with_the_server_that_started_it(tmp_path, store):
    fifo = tmp_path / "never-written.jsonl"
    os.mkfifo(fifo)     # the worker blocks reading it: a long count
    server = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from studio import token_worker as w; "
        f"w.start('0' * 64, {str(fifo)!r}); print(w._jobs['0' * 64].proc.pid, flush=True); time.sleep(60)")],
        cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True)
    worker = int(server.stdout.readline())
    time.sleep(1.0)
    assert _alive(worker)
    server.send_signal(signal.SIGKILL)       # no atexit: only the worker's own watch can notice
    server.wait()
    deadline = time.monotonic() + 10
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(worker), "the worker outlived its server"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture
def big(monkeypatch, store):
    """The sample stands in for a 25,000-call trace (its first open starts the worker); ``big(page)`` opens
    ``page`` first (the Traces page would count the series itself for its summary)."""
    st.cache_resource.clear()
    st.cache_data.clear()
    monkeypatch.setattr(opening, "BIG_CALLS", 1)
    monkeypatch.setattr(warmup, "_started", set())
    monkeypatch.setattr(warmup, "_shown_ahead", set())
    monkeypatch.setattr(warmup, "WARM_CALLS", 10**9)     # no replay warm-up: not what is tested here
    monkeypatch.setenv("CHAIN_STUDIO_OPEN", str(LONG))

    def open_first(page: str) -> AppTest:
        at = AppTest.from_file(str(APP), default_timeout=120)
        at.switch_page(page).run()
        assert not at.exception, [e.message for e in at.exception]
        return at
    yield open_first
    for job in token_worker._jobs.values():
        job.proc.kill()
        job.proc.wait()
    gc.unfreeze()       # the first open froze this process's objects out of the GC


def test_the_tokens_page_shows_the_worker_series(big, monkeypatch):
    counted_here: list = []
    real = token_worker.count
    monkeypatch.setattr(token_worker, "count", lambda trace: counted_here.append(1) or real(trace))
    monkeypatch.setattr(tokens_vm, "largest_messages", lambda *a: counted_here.append(2))
    at = big("screens/timeline.py")
    assert list(token_worker._jobs) == [_digest(LONG)]
    at.switch_page("screens/tokens.py").run()
    assert not at.exception, [e.message for e in at.exception]
    assert counted_here == [], "the page counted the series itself"
    assert at.metric[0].value == f"{sum(_whole_requests(LONG)):,}"
    assert not at.warning


def test_a_failed_worker_is_said_on_the_tokens_page(big, monkeypatch):
    digest = _digest(LONG)
    monkeypatch.setattr(token_worker, "_jobs", {})
    # the worker of this digest is pointed at another file: it refuses it and stores nothing
    assert token_worker.start(digest, str(OTHER))
    monkeypatch.setattr(warmup, "_started", {(digest, "", "count")})
    assert token_worker.wait(digest, 60)
    at = big("screens/tokens.py")
    [warning] = [w.value for w in at.warning]
    assert warning.startswith("The background token count failed, so this page counts the tokens itself: ")
    assert "changed since the studio opened it" in warning
    assert at.metric[0].value == f"{sum(_whole_requests(LONG)):,}"      # counted in the page, whole


def test_a_table_page_of_long_calls_waits_for_the_counting_process(monkeypatch):
    """Encoding a long call's messages beside the worker that is counting them anyway only takes its CPU."""
    import uuid

    from agent_core.trace.synthetic import synthetic_trace
    from studio import estimate_services, services

    trace = synthetic_trace(6)
    loaded = services.Loaded(None, uuid.uuid4().hex, trace)
    waited: list = []
    monkeypatch.setattr(opening, "BIG_CALLS", 1)         # the sample stands in for a 25,000-call trace
    monkeypatch.setattr(token_worker, "running", lambda digest: True)
    monkeypatch.setattr(token_worker, "wait_series", lambda digest: waited.append(digest))
    monkeypatch.setattr(estimate_services, "WAIT_MESSAGES", len(trace.calls[4].messages))
    exact = {c.index: counter_for(c.model).count_payload(c.messages, c.tools) for c in trace.calls}
    assert not estimate_services.waits_for_count(loaded, [0, 1]) and estimate_services.waits_for_count(loaded, [4, 5])
    assert estimate_services.row_estimates(loaded, [0, 1]) == {0: exact[0], 1: exact[1]} and waited == []
    assert estimate_services.row_estimates(loaded, [4, 5]) == {4: exact[4], 5: exact[5]}
    assert waited == [loaded.digest]


def _counted_by_a_worker(monkeypatch, path=LONG):
    """``path`` (a stand-in for a 25,000-call trace) counted by a real worker process to the end, and its ``Loaded``."""
    from studio import services

    st.cache_resource.clear()      # no series read in by an earlier test (``opening.counted``)
    monkeypatch.setattr(opening, "BIG_CALLS", 1)
    monkeypatch.setattr(warmup, "_started", set())
    digest = _digest(path)
    assert token_worker.start(digest, str(path))
    assert token_worker.wait(digest, 60) is None and token_worker.done(digest)
    return services.Loaded(None, digest, read_trace(path))


def test_a_table_page_takes_its_estimates_from_the_stored_series_without_reading_it_in(store, monkeypatch):
    """Once the worker has stored the series, a Timeline page reads its rows' estimates from the stored head (25,000
    ints) rather than the whole series (0.27 s at 25,000 calls beside the first open's background work)."""
    from studio import estimate_services, services

    loaded = _counted_by_a_worker(monkeypatch)
    monkeypatch.setattr(services, "token_series", lambda loaded: pytest.fail("the whole series was read in"))
    exact = _whole_requests(LONG)
    calls = [len(exact) - 3, len(exact) - 2, len(exact) - 1]
    assert estimate_services.row_estimates(loaded, calls) == {i: exact[i] for i in calls}
    assert not opening.counted(loaded.digest)


def test_without_a_stored_head_a_table_page_reads_the_whole_series(store, monkeypatch):
    from studio import estimate_services

    loaded = _counted_by_a_worker(monkeypatch)
    for f in store.glob(token_worker.HEAD_KIND + "-*.json"):
        f.write_text("damaged")
    exact = _whole_requests(LONG)
    assert estimate_services.row_estimates(loaded, [0, 1]) == {0: exact[0], 1: exact[1]}
    assert opening.counted(loaded.digest)


def test_the_series_is_read_in_ahead_once_the_worker_has_stored_it(store, monkeypatch):
    """After a page run the stored series is read into the server in the background, once, so the Tokens page
    finds it; while the worker still counts, the read waits for the series."""
    loaded = _counted_by_a_worker(monkeypatch)
    st.cache_data.clear()
    built: list = []
    for name in ("call_bins", "cumulative_cost", "truncation_suspects"):     # the Tokens page's views of it too
        real = getattr(tokens_vm, name)
        monkeypatch.setattr(tokens_vm, name, lambda *a, _real=real, _name=name: built.append(_name) or _real(*a))
    future = warmup.series_ahead(loaded)
    assert future is not None and warmup.series_ahead(loaded) is None
    future.result(60)
    assert opening.counted(loaded.digest)
    assert sorted(built) == ["call_bins", "cumulative_cost", "truncation_suspects"]
    assert warmup.series_ahead(loaded) is None


def test_a_big_traces_stream_is_built_ahead_once(monkeypatch):
    """After a page run of a big trace read from a file, its stream's messages are built in the background (the
    first page to read them, Lineage at 25,000 calls, spent 0.15-0.3 s on them), then the search index; a small
    trace's are not."""
    monkeypatch.setattr(warmup, "_started", set())
    from studio import services

    trace = read_trace(LONG)
    assert trace.stream_deferred
    monkeypatch.setattr(opening, "BIG_CALLS", len(trace.calls) + 1)
    assert warmup.stream_ahead(services.Loaded(None, _digest(LONG), trace)) is None and trace.stream_deferred
    monkeypatch.setattr(opening, "BIG_CALLS", 1)
    loaded = services.Loaded(None, _digest(LONG), trace)
    st.cache_resource.clear()
    from studio import lineage_services
    from studio.viewmodels import lineage as lineage_vm

    indexed: list = []
    real = services._search.SearchIndex
    monkeypatch.setattr(services._search, "SearchIndex", lambda t: indexed.append(t) or real(t))
    real_turns = lineage_vm.turns
    monkeypatch.setattr(lineage_vm, "turns", lambda t: indexed.append("turns") or real_turns(t))
    future = warmup.stream_ahead(loaded)
    assert future is not None and warmup.stream_ahead(loaded) is None
    future.result(60)
    assert not trace.stream_deferred
    assert [m.id for m in trace.stream] == [m.id for m in read_trace(LONG).stream]
    assert indexed == [trace, "turns"]       # and what the Timeline's first search and the Lineage page read
    services.search_index(loaded.digest, trace)
    lineage_services.turns(loaded)
    assert indexed == [trace, "turns"]


def test_a_failed_count_is_not_read_ahead(store, monkeypatch):
    """A worker that stored nothing leaves the count to the Tokens page, which says it failed."""
    digest = _digest(LONG)
    st.cache_resource.clear()
    monkeypatch.setattr(opening, "BIG_CALLS", 1)
    monkeypatch.setattr(warmup, "_started", set())
    assert token_worker.start(digest, str(OTHER))       # pointed at another file: it refuses it
    from studio import services

    loaded = services.Loaded(None, digest, read_trace(LONG))
    future = warmup.series_ahead(loaded)
    assert future is not None
    future.result(60)
    assert token_worker.failure(digest) and not opening.counted(digest)


def test_the_worker_takes_a_parse_kept_on_disk(tmp_path, store, monkeypatch):
    """Where ``agent_core/ingest/snapshot.py`` keeps parsed traces, the worker loads the kept parse of the file's
    sha256 instead of parsing it: shown here by keeping another trace's parse under the file's digest."""
    snapshot = pytest.importorskip("agent_core.ingest.snapshot")
    monkeypatch.setenv(snapshot.ENV, str(tmp_path / "parsed"))
    kept = read_trace(OTHER)
    assert len(kept.calls) != len(read_trace(LONG).calls)
    assert snapshot.save(_digest(LONG), kept)
    assert _run_worker(str(LONG), _digest(LONG)).returncode == 0
    assert token_worker.stored(_digest(LONG), len(read_trace(LONG).calls)) is None
    assert [t.estimated for t in token_worker.stored(_digest(LONG), len(kept.calls))] == _whole_requests(OTHER)


def test_the_traces_page_does_not_wait_for_the_workers_heaviest_messages(monkeypatch, store):
    """The sampled-text count of a worker still running is computed in the server (a quarter second at 25,000
    calls), the same function the worker runs; only the heaviest messages wait for the worker's views."""
    import uuid

    from agent_core.trace.synthetic import synthetic_trace

    trace = synthetic_trace(6)
    digest = uuid.uuid4().hex
    waited: list = []
    monkeypatch.setattr(token_worker, "running", lambda d: True)
    monkeypatch.setattr(token_worker, "wait", lambda d, timeout=None: waited.append(d))
    assert token_worker.page_view(digest, trace, "sampled", 0, tokens_vm.sampled_texts) == \
        tokens_vm.sampled_texts(trace) == 0
    assert waited == []
    largest = token_worker.page_view(digest, trace, "largest", 3, tokens_vm.largest_messages)
    assert waited == [digest] and largest == tokens_vm.largest_messages(trace, 3)


def test_the_counting_threads_short_jobs_wait_for_the_page_being_drawn(monkeypatch):
    """The stream built ahead waits while a page run is under way, and goes on once it has ended."""
    import threading

    from studio import services

    monkeypatch.setattr(warmup, "_started", set())
    monkeypatch.setattr(opening, "BIG_CALLS", 1)
    trace = read_trace(LONG)
    ended = threading.Event()
    with warmup.page_run():
        future = warmup.stream_ahead(services.Loaded(None, _digest(LONG), trace))
        assert future is not None
        threading.Timer(0.3, ended.set).start()
        ended.wait(5)
        assert not future.done() and trace.stream_deferred
    future.result(10)
    assert not trace.stream_deferred
