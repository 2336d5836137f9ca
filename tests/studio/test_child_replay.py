"""The Replay page's first view of a big trace is computed by the server's forked linting child, from the server's
own parse, once the forked counting child has counted (studio/count_child.py).

Real parts: real forked children of this process, the real view store and token store. What the child stores is
checked against the replay engine run here (``agent_core.replay.engine.replay`` with the policies' own classes),
not against the child's code; the order of the children's phases is read from their own phase log
(``CHAIN_STUDIO_PHASES``)."""
from __future__ import annotations

import time
import uuid

import pytest

from agent_core.core.paths import SAMPLE_TRACES
from agent_core.replay.engine import chat_calls, replay
from agent_core.trace.reader import read_trace
from agent_core.trim.budget import TokenBudget
from agent_core.trim.window import MaxMessages
from studio import count_child, phases, replay_worker, token_worker, view_store

LONG = SAMPLE_TRACES / "long_trimmed_fact.jsonl"


@pytest.fixture
def forked(tmp_path, monkeypatch):
    """Empty stores, no jobs of other tests, a phase log, every trace replayed ahead; the fork of a fresh digest."""
    monkeypatch.setenv("CHAIN_STUDIO_TOKEN_CACHE", str(tmp_path / "tokens"))
    monkeypatch.delenv(view_store.ENV, raising=False)
    monkeypatch.setenv("CHAIN_STUDIO_TRACE_CACHE", "off")
    monkeypatch.setenv(phases.ENV, str(tmp_path / "phases.log"))
    monkeypatch.setattr(replay_worker, "_jobs", {})
    monkeypatch.setattr(replay_worker, "_views", {})
    monkeypatch.setattr(token_worker, "_jobs", {})
    monkeypatch.setattr(count_child, "REPLAY_CALLS", 1)
    return tmp_path / "phases.log"


def test_the_linting_child_replays_once_the_count_is_done(forked, monkeypatch):
    from studio.viewmodels import findings

    real = findings.findings_for
    monkeypatch.setattr(findings, "findings_for", lambda *a: time.sleep(0.5) or real(*a))   # a lint that takes time
    trace = read_trace(LONG)
    digest = uuid.uuid4().hex
    assert count_child.fork(digest, trace, str(LONG), "openai")
    assert replay_worker.running(digest, "openai") or replay_worker.is_stored(digest, "openai")
    # the warm-up's start finds it (no worker process is spawned beside it)
    assert replay_worker.start(digest, str(LONG), "openai", token_worker.pid(digest))
    assert list(replay_worker._jobs) == [(digest, "openai")]
    assert replay_worker.wait(digest, "openai", 120) is None and token_worker.wait(digest, 120) is None
    view = replay_worker.stored_view(digest, "openai", 2)
    assert view is not None
    engine = [replay(trace, MaxMessages(40)), replay(trace, TokenBudget(8000))]
    assert [c["tokens"] for c in view.columns] == [r.totals["tokens"] for r in engine]
    assert [c["rejected"] for c in view.columns] == [r.totals["rejected"] for r in engine]
    calls = [c.index for c in chat_calls(trace)]
    assert view.indexes == calls and view.call == calls[-1]
    assert [d["tokens"] for d in view.detail] == [r.calls[-1].tokens for r in engine]
    # its replays began once the counts were there: counted from the stream's end here until the counting child's
    # reached them, or flushed by that child
    said = [line.split(" ", 3)[3] for line in forked.read_text().splitlines()]
    counted = next(i for i, s in enumerate(said) if s.startswith("replay stage counted ("))
    assert said.index("lint child linted") < said.index("replay stage waits for the count") < counted \
        < said.index("replay worker probes") < said.index("replay stage computed")
    assert said.index("series counted") < said.index("count child flushed its counts")
    # and the counting child began once the linting child had linted (the first page waits for the lint)
    assert said.index("lint child linted") < said.index("count child start") < said.index("series counted")


def test_a_child_that_cannot_store_the_view_says_why(forked, monkeypatch):
    trace = read_trace(LONG)
    digest = uuid.uuid4().hex
    saved = view_store.save
    monkeypatch.setattr(view_store, "save", lambda kind, *a: kind != replay_worker.KIND and saved(kind, *a))
    assert count_child.fork(digest, trace, str(LONG), "openai")
    said = replay_worker.wait(digest, "openai", 120)
    assert said == "the replay view could not be stored (the view store is off or refused it)."
    assert replay_worker.failure(digest, "openai") == said and not replay_worker.is_stored(digest, "openai")
    assert token_worker.wait(digest, 120) is None       # the count itself did not fail



def test_the_linting_child_counts_the_stream_from_its_end_until_the_counting_child_s_counts_reach_it(forked):
    """``_count_back`` counts from the stream's last message back and stops where the calls the counting child has
    counted (shared ``covered``) reach; with the pipe at EOF it stops at once; with no progress shared it counts
    the whole stream. What it counts is the tokenizer's count, kept on the message for the replays."""
    import ctypes
    import os

    from agent_core.replay.calls import call_position, trace_model
    from agent_core.trace.synthetic import synthetic_trace
    from agent_core.trim.message_tokens import MessageTokens

    def back(trace, covered, eof: bool = False) -> int:
        read_end, write_end = os.pipe()
        if eof:
            os.close(write_end)
        try:
            return count_child._count_back(trace, read_end, covered)
        finally:
            os.close(read_end)
            if not eof:
                os.close(write_end)

    trace = synthetic_trace(600)
    n = len(trace.stream)
    covered = (ctypes.c_int64 * 1)()
    covered[0] = 300        # the counting child has counted the first 300 calls
    before = call_position(trace.calls[299], n)
    counted = back(trace, covered)
    assert n - before <= counted < n - before + count_child.BACK_STEP
    mt = MessageTokens(trace_model(trace))
    fresh = synthetic_trace(600).stream
    assert [m.__dict__[mt._attr] for m in trace.stream[n - counted:]] == \
        [mt.counter.count_message(m.to_openai()) for m in fresh[n - counted:]]
    assert mt._attr not in trace.stream[n - counted - 1].__dict__     # the counting child's part is not counted here
    assert back(synthetic_trace(600), covered, eof=True) == 0        # it has flushed everything
    covered[0] = 0
    assert back(synthetic_trace(50), covered) == len(synthetic_trace(50).stream)     # it has not begun


def test_the_replay_page_shows_how_far_the_linting_child_has_got(forked, monkeypatch):
    """Clicked while the server's linting child still works for it, the Replay page draws a bar from the stages the
    child reports in shared memory (``replay_worker.Progress``), then the child's view: the engine's figures."""
    import gc
    import hashlib

    import streamlit as st
    from conftest import APP
    from streamlit.testing.v1 import AppTest

    from studio.viewmodels import findings, replay_first

    real = findings.findings_for
    monkeypatch.setattr(findings, "findings_for", lambda *a: time.sleep(1.5) or real(*a))    # still linting
    trace = read_trace(LONG)
    digest = hashlib.sha256(LONG.read_bytes()).hexdigest()      # the key the page opens the file under
    st.cache_resource.clear()
    st.cache_data.clear()
    assert count_child.fork(digest, trace, str(LONG), "openai")
    shown: list = []
    real_progress = replay_worker.progress
    monkeypatch.setattr(replay_worker, "progress", lambda *a: shown.append(real_progress(*a)) or shown[-1])
    monkeypatch.setenv("CHAIN_STUDIO_OPEN", str(LONG))
    try:
        at = AppTest.from_file(str(APP), default_timeout=120)
        at.switch_page("screens/replay.py").run()
        assert not at.exception, [e.message for e in at.exception]
        bars = [s for s in shown if s is not None]
        assert bars and bars[0][1].startswith("Preparing the replay of ")        # it was still linting
        assert [b[0] for b in bars] == sorted(b[0] for b in bars) and shown[-1] is None
        assert replay_worker._progress[(digest, "openai")].get()[0] == replay_first.VIEW    # its last stage
        budget = replay(trace, TokenBudget(8000))
        assert at.metric[3].value == f"{budget.totals['tokens']:,}" and not at.warning
    finally:
        token_worker.wait(digest, 120)
        gc.unfreeze()       # the open froze this process's objects out of the GC


def test_counting_back_goes_first_to_the_calls_a_page_waits_for(forked, monkeypatch):
    """The linting child counts the stream from its end while the counting child counts from the start; a page
    waiting for calls in the middle (``wanted``) makes it count back from the last message those calls hold, then
    from the end down to there: each message once."""
    import ctypes
    import os

    from agent_core.trim.message_tokens import MessageTokens

    trace = read_trace(LONG)
    stream = trace.stream
    where = {id(m): i for i, m in enumerate(stream)}
    order: list[int] = []
    real = MessageTokens.stream_tokens
    monkeypatch.setattr(MessageTokens, "stream_tokens", lambda self, m: order.append(where[id(m)]) or real(self, m))
    monkeypatch.setattr(count_child, "BACK_STEP", 5)
    page = len(trace.calls) // 2
    need = max(c.stream_index for c in trace.calls[:page])      # the stream messages calls 0 .. page-1 were made after
    covered = (ctypes.c_int64 * 1)(0)       # the counting child has counted nothing
    wanted = (ctypes.c_int64 * 1)(page)
    counting, open_end = os.pipe()          # no EOF: it has not flushed its counts
    try:
        assert count_child._count_back(trace, counting, covered, None, wanted) == len(stream)
    finally:
        os.close(counting)
        os.close(open_end)
    assert 0 < need < len(stream)
    assert order == [*range(need - 1, -1, -1), *range(len(stream) - 1, need - 1, -1)]
