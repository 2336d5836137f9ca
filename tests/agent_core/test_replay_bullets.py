"""summary-window's bullet lines counted ahead by a forked child (replay/bullets.py): every summary still counts
what tiktoken counts over its whole text, the walk encodes none of the lines the child sent, a child that sends
nothing changes no figure, and a first replay's report is the same with the feed and without it.

Expected counts come from tiktoken itself (the cookbook formula over the whole text, encoded in one piece)."""
from __future__ import annotations

import io
import json
import os

import pytest

from agent_core.replay import bullets, counting, report
from agent_core.replay.engine import policy_for_trace, replay
from agent_core.trace import tokens
from agent_core.trace.synthetic import synthetic_trace
from agent_core.trace.tokens import counter_for, get_encoding
from agent_core.trim.message_tokens import MessageTokens
from agent_core.trim.summarizers import SUMMARY_HEADER, ExtractiveSummarizer

_CACHED = (tokens.token_store, tokens._counter_for_encoding, tokens.counter_for)
MODEL = "gpt-4o"


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty token store, and counters that know nothing yet."""
    monkeypatch.setenv("CHAIN_STUDIO_TOKEN_CACHE", str(tmp_path / "tc"))
    for cached in _CACHED:
        cached.cache_clear()
    yield
    for cached in _CACHED:
        cached.cache_clear()


def _whole(d: dict) -> int:
    enc = get_encoding("o200k_base")
    return 3 + len(enc.encode_ordinary(d["role"])) + len(enc.encode_ordinary(d["content"]))


def _summaries(result) -> dict[str, dict]:
    return {mid: d for c in result.calls for mid, d in zip(c.payload.ids(), c.payload.messages())
            if mid.startswith("summary_")}


def _produced_in_a_child(feed: bullets.BulletFeed) -> None:
    pid = os.fork()
    if pid == 0:
        try:
            feed.produce()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _walk_encoding(trace, policy, ahead) -> tuple[object, list[str]]:
    """The replay (stream counted before it) and every text its walk handed the encoder."""
    counter = counter_for(MODEL)
    mt = MessageTokens(MODEL)
    for m in trace.stream:
        mt.tokens(m)
    handed: list[str] = []
    real = counter.encode_len

    def spy(text):
        handed.append(text)
        return real(text)
    counter.encode_len = spy
    try:
        return replay(trace, policy, lint_calls=False, ahead=ahead), handed
    finally:
        del counter.encode_len


def test_the_walk_takes_the_childs_lines_and_every_summary_counts_what_tiktoken_counts_whole(fresh):
    trace = synthetic_trace(600)
    policy = policy_for_trace("summary-window", {"keep_turns": 2}, trace)
    feed = bullets.BulletFeed.for_policy(policy, trace.stream, MessageTokens(MODEL))
    assert feed is not None
    _produced_in_a_child(feed)
    try:
        result, handed = _walk_encoding(trace, policy, feed.pull)
    finally:
        feed.close()
    summaries = _summaries(result)
    assert len(summaries) > 100
    mt = MessageTokens(MODEL)
    assert all(mt._bulleted(d) in (None, _whole(d)) for d in summaries.values())
    # the lines came from the child: the walk encoded no fact line, as a middle line or as the last
    facts = set(ExtractiveSummarizer.facts_of(trace.stream))
    assert not [t for t in handed if t.endswith("\n-") and t != SUMMARY_HEADER + "\n-" or t[1:] in facts]
    # and every call's count is what the walk makes alone (tests/agent_core/test_bulleted_tokens.py: tiktoken's)
    alone, _ = _walk_encoding(trace, policy_for_trace("summary-window", {"keep_turns": 2}, trace), None)
    assert [c.tokens for c in result.calls] == [c.tokens for c in alone.calls]


def test_a_child_that_sends_nothing_changes_no_count(fresh):
    trace = synthetic_trace(300)
    policy = policy_for_trace("summary-window", {"keep_turns": 2}, trace)
    asked = []

    def nothing_yet():
        asked.append(1)
        return {} if len(asked) < 50 else None      # then the end: not asked again
    result, handed = _walk_encoding(trace, policy, nothing_yet)
    assert len(asked) == 50
    assert any(t.endswith("\n-") and t != SUMMARY_HEADER + "\n-" for t in handed)      # encoded here instead
    summaries = _summaries(result)
    mt = MessageTokens(MODEL)
    assert summaries and all(mt._bulleted(d) in (None, _whole(d)) for d in summaries.values())


def test_only_extractive_summary_window_gets_a_feed():
    trace = synthetic_trace(40)
    mt = MessageTokens(MODEL)
    assert bullets.BulletFeed.for_policy(policy_for_trace("sliding-window", {}, trace), trace.stream, mt) is None
    llm = policy_for_trace("summary-window", {"summarizer": "llm"}, trace, client=object())
    assert bullets.BulletFeed.for_policy(llm, trace.stream, mt) is None
    assert bullets.BulletFeed.for_policy(policy_for_trace("summary-window", {}, trace), trace.stream, mt) is not None


def _report(path, monkeypatch, feed: bool) -> tuple[dict, int]:
    """The first replay's JSON report of ``path`` under summary-window (the counting child forked whatever the
    machine runs), and how many counts the walk took from the feed."""
    taken = [0]
    real_pull = bullets.BulletFeed.pull

    def pull(self):
        got = real_pull(self)
        taken[0] += len(got or ())
        return got
    with monkeypatch.context() as m:
        m.setattr(counting, "MIN_MESSAGES", 0)
        m.setattr(counting, "_idle_core", lambda: True)
        m.setattr(bullets.BulletFeed, "pull", pull)
        if not feed:
            m.setattr(bullets.BulletFeed, "for_policy", classmethod(lambda cls, *a: None))
        for cached in _CACHED:
            cached.cache_clear()
        out = io.StringIO()
        report.replay_file(str(path), "summary-window", ["keep_turns=2"], (), "json", out=out)
    return json.loads(out.getvalue()), taken[0]


def test_a_first_replays_report_is_the_same_with_the_feed_and_without(tmp_path, monkeypatch):
    from benchmarks.synthetic import generate

    path = generate(tmp_path / "conversation.jsonl", 400)
    monkeypatch.setenv("CHAIN_STUDIO_TOKEN_CACHE", str(tmp_path / "with"))
    with_feed, taken = _report(path, monkeypatch, feed=True)
    monkeypatch.setenv("CHAIN_STUDIO_TOKEN_CACHE", str(tmp_path / "without"))
    without, none = _report(path, monkeypatch, feed=False)
    assert taken > 100 and none == 0
    assert with_feed["totals"] == without["totals"]
    assert [c["tokens"] for c in with_feed["calls"]] == [c["tokens"] for c in without["calls"]]
    assert len(with_feed["messages"]) == len(without["messages"])
