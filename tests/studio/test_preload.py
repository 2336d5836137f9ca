"""The studio reads the ``--open`` file while the browser loads the page (studio/preload.py), and a big trace's
token series is counted by a forked child of the server from its own parse (count_child.fork).

Real parts: a real trace file, the real cached functions, a real forked child, Streamlit's AppTest for the page.
Expected token counts come from tiktoken's count of each whole request (``count_payload``: the cookbook formula
over the call's own messages and tools), not from the series code the child runs."""
from __future__ import annotations

import hashlib
import subprocess
import sys
import time
import uuid

import pytest
from conftest import APP
from streamlit.testing.v1 import AppTest

from agent_core.cli.studio import studio_command
from agent_core.core.paths import PROJECT_ROOT
from agent_core.ingest import snapshot
from agent_core.trace.reader import read_trace
from agent_core.trace.synthetic import synthetic_trace
from agent_core.trace.tokens import counter_for
from agent_core.trace.writer import write_trace
from studio import count_child, estimate_services, opening, preload, services, token_worker, view_store, warmup
from studio.worker_process import Worker
from studio.viewmodels import findings as findings_vm
from studio.viewmodels import tokens as tokens_vm

CALLS = 40
"""Past ``opening.BIG_CALLS`` (set to 30 here): a big trace (its file padded past the 1 MB hashed by path)."""


def _exact(call) -> int:
    return counter_for(call.model).count_payload(call.messages, call.tools)


@pytest.fixture
def big(tmp_path, monkeypatch):
    """A big trace file no earlier test has opened, empty stores, no workers of other tests."""
    trace = synthetic_trace(CALLS)
    trace.meta["run"] = uuid.uuid4().hex
    trace.meta["notes"] = "padding " * 140_000
    path = tmp_path / "big.jsonl"
    write_trace(trace, path)
    monkeypatch.setenv("CHAIN_STUDIO_TOKEN_CACHE", str(tmp_path / "tokens"))
    monkeypatch.delenv(view_store.ENV, raising=False)
    monkeypatch.delenv(snapshot.ENV, raising=False)
    monkeypatch.setattr(token_worker, "_jobs", {})
    monkeypatch.setattr(opening, "BIG_BYTES", 1_000_000)       # this 1.1 MB file counts as big
    monkeypatch.setattr(opening, "BIG_CALLS", 30)
    monkeypatch.setattr(snapshot, "MIN_BYTES", 1_000_000)      # and its parse is kept on disk
    monkeypatch.setattr(warmup, "WARM_CALLS", 100_000)          # no replays in the background here
    assert path.stat().st_size > 1_000_000
    return path


def test_the_page_finds_the_preloaded_trace_parsed_linted_and_counted(big, monkeypatch):
    assert preload.preload(str(big))
    digest = hashlib.sha256(big.read_bytes()).hexdigest()
    # from here the page may not parse, lint or count its table page again: it reads what the preload cached
    monkeypatch.setattr(services._importers, "load_any", lambda *a, **k: pytest.fail("parsed again"))
    monkeypatch.setattr(findings_vm, "findings_for", lambda *a, **k: pytest.fail("linted again"))
    from studio.viewmodels import timeline as timeline_vm
    monkeypatch.setattr(timeline_vm, "page_estimates", lambda calls: pytest.fail("counted again"))
    monkeypatch.setenv("CHAIN_STUDIO_OPEN", str(big))
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.switch_page("screens/timeline.py").run()
    assert not at.exception, [e.message for e in at.exception]
    assert not at.get("progress"), "a first-open progress bar was drawn for work done already"
    written = read_trace(big)
    assert {m.label: m.value for m in at.metric}["Calls"] == f"{CALLS:,}"
    table = at.dataframe[0].value
    assert list(table["call"]) == list(range(20))
    assert list(table["estimated"]) == [_exact(written.calls[c]) for c in table["call"]]
    # the series was counted by a forked child of this process, from the parse it already had
    job = token_worker._jobs[digest]
    assert isinstance(job.proc, count_child._Forked)
    assert token_worker.wait(digest, 120) is None
    series = token_worker.stored(digest, CALLS)
    assert series is not None
    assert [t.estimated for t in series] == [_exact(c) for c in written.calls]
    # ... and the linting child kept the parse on disk for the next process (without its lint cache)
    deadline = time.monotonic() + 60
    while (kept := snapshot.load(digest)) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert kept is not None and len(kept.calls) == CALLS and kept.meta == written.meta
    assert [c.messages for c in kept.calls[-3:]] == [c.messages for c in written.calls[-3:]]


def test_the_child_lints_while_the_server_counts_its_table_page(big, monkeypatch):
    trace = read_trace(big)
    expected = findings_vm.findings_for(read_trace(big), "openai")       # linted here, on a parse of its own
    assert expected, "the synthetic trace should have findings to hand over"
    digest = uuid.uuid4().hex
    assert count_child.fork(digest, trace, str(big), "openai")
    monkeypatch.setattr(findings_vm, "findings_for", lambda *a, **k: pytest.fail("the server linted"))
    loaded = services.Loaded(None, digest, trace)
    assert services.findings(loaded, "openai") == expected           # the child's, waited for
    with pytest.raises(pytest.fail.Exception):
        services.findings(loaded, "anthropic")       # another profile than the child's: the server lints it
    assert token_worker.wait(digest, 120) is None


def test_a_child_that_cannot_store_says_why(big, monkeypatch):
    trace = read_trace(big)
    digest = uuid.uuid4().hex
    monkeypatch.setattr(count_child, "KEEP_PARSE", False)
    monkeypatch.setattr(view_store, "save", lambda *a: False)       # inherited by the child: the store refuses
    assert count_child.fork(digest, trace, str(big))
    assert count_child.fork(digest, trace, str(big))               # once per digest: the same child
    assert len(token_worker._jobs) == 1
    said = token_worker.wait(digest, 120)
    assert said == "the token series could not be stored (the view store is off or refused it)."
    assert token_worker.failure(digest) == said and not token_worker.done(digest)


def test_no_child_when_the_series_is_stored_or_the_view_store_is_off(big, monkeypatch):
    trace = read_trace(big)
    digest = uuid.uuid4().hex
    assert token_worker.store(digest, token_worker.count(trace))
    assert not count_child.fork(digest, trace, str(big)) and not token_worker._jobs
    monkeypatch.setenv(view_store.ENV, "off")
    assert not count_child.fork(uuid.uuid4().hex, trace, str(big)) and not token_worker._jobs


def test_a_small_or_odd_file_is_left_to_the_page(tmp_path, big):
    small = tmp_path / "small.jsonl"
    write_trace(synthetic_trace(3), small)
    assert not preload.preload(str(small))
    assert not preload.preload(str(tmp_path / "missing.jsonl"))
    odd = tmp_path / "odd.json"
    odd.write_text("{" + " " * 1_100_000 + "not JSON")
    assert not preload.preload(str(odd))        # the page reports it in one sentence; the preload only stops


def test_the_studio_is_served_through_the_preloading_entry_point(tmp_path):
    cmd = studio_command(tmp_path / "t.jsonl", 8599)
    assert cmd[1:5] == ["-m", "studio.preload", "run", str(PROJECT_ROOT / "studio" / "app.py")]
    assert cmd[-2:] == ["--open", str(tmp_path / "t.jsonl")]
    # Streamlit's own command line behind it (its version subcommand: no server started)
    out = subprocess.run([sys.executable, "-m", "studio.preload", "version"], cwd=PROJECT_ROOT, capture_output=True,
                         text=True, timeout=60, check=False)
    import streamlit

    assert out.returncode == 0 and f"version {streamlit.__version__}" in out.stdout, out.stderr


def test_the_series_counted_in_steps_is_the_series(big):
    trace = read_trace(big)
    heads: list[list[int]] = []
    series = tokens_vm.token_series(trace, 7, lambda so_far: heads.append([t.estimated for t in so_far]))
    exact = [_exact(c) for c in trace.calls]
    assert [len(h) for h in heads] == [7, 14, 21, 28, 35, 40]
    assert all(h == exact[:len(h)] for h in heads)
    assert [t.estimated for t in series] == exact and series == tokens_vm.token_series(trace)


def test_the_count_stores_its_head_as_soon_as_it_has_counted_the_calls_a_page_waits_for(big, monkeypatch):
    """Between two heads every ``HEAD_STEP`` calls, the counting child looks every ``HEAD_CHECK`` calls whether a
    page waits for calls it has now counted (``wanted``, set by ``wait_head``), and stores its head then; it shares
    its per-text counts at each look (``counted``)."""
    import ctypes

    trace = read_trace(big)
    digest = uuid.uuid4().hex
    monkeypatch.setattr(token_worker, "HEAD_STEP", 10_000)      # no regular head in a 40-call trace
    monkeypatch.setattr(token_worker, "HEAD_CHECK", 5)
    wanted = (ctypes.c_int64 * 1)(13)
    told: list[int] = []
    token_worker.store_views(digest, trace, counted=told.append, wanted=wanted)
    exact = [_exact(c) for c in trace.calls]
    assert told == [5, 10, 15, 20, 25, 30, 35, 40]      # counts shared at each look, for a linting child
    assert view_store.load(token_worker.HEAD_KIND, digest, "") == exact[:15]     # the first look past call 13
    # a page waiting for calls 20-24 of a trace still being counted tells its forked child so
    other = uuid.uuid4().hex
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        token_worker._jobs[other] = token_worker._Job(Worker(running, None, "counting child"), [None], wanted=wanted)
        view_store.save(token_worker.HEAD_KIND, other, "", exact[:25])     # as the child would, once told
        assert token_worker.wait_head(other, [20, 21, 24]) == {20: exact[20], 21: exact[21], 24: exact[24]}
        assert wanted[0] == 25
    finally:
        running.kill()
        running.wait()


def test_a_table_page_in_the_middle_reads_the_head_of_the_count(big, monkeypatch):
    trace = read_trace(big)
    digest = uuid.uuid4().hex
    monkeypatch.setattr(token_worker, "HEAD_STEP", 10)           # inherited by the child
    assert count_child.fork(digest, trace, str(big))
    assert token_worker.wait(digest, 120) is None
    exact = {c.index: _exact(c) for c in trace.calls}
    assert token_worker.head(digest, [25, 30]) == {25: exact[25], 30: exact[30]}     # the child's last head: all 40
    assert token_worker.head(digest, [40]) is None
    # a page whose calls the count has passed takes their estimates while the whole series is not there yet
    other = uuid.uuid4().hex
    view_store.save(token_worker.HEAD_KIND, other, "", [exact[i] for i in range(20)])
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        token_worker._jobs[other] = token_worker._Job(Worker(running, None, "counting process"), [None])
        monkeypatch.setattr(estimate_services, "WAIT_MESSAGES", 0)      # these calls wait for the count
        loaded = services.Loaded(None, other, trace)
        assert estimate_services.waits_for_count(loaded, [12, 13])
        assert estimate_services.row_estimates(loaded, [12, 13]) == {12: exact[12], 13: exact[13]}
        assert token_worker.running(other)      # answered from the head, the count still under way
    finally:
        running.kill()
        running.wait()
