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
    # its replays began after the counting child had stored the series and flushed its per-text counts
    said = [line.split(" ", 3)[3] for line in forked.read_text().splitlines()]
    assert said.index("series counted") < said.index("count child flushed its counts") < said.index(
        "replay stage counted") < said.index("replay stage computed")
    assert said.index("lint child linted") < said.index("replay stage counted")
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
