"""A trace file's texts counted by a forked child while the file is parsed (replay/warmer.py): every count is
tiktoken's through a counter of its own, the child's part arrives through the on-disk store, the child stops when
told, it is not started where it cannot pay, and a replay's report is the same with it and without it."""
from __future__ import annotations

import io
import json
import os
import time

import pytest

from agent_core.core.models import tokenizer
from agent_core.ingest import snapshot
from agent_core.ingest.detect import load_any
from agent_core.replay import report, warmer
from agent_core.trace import tokens
from agent_core.trace.tokens import TokenCounter
from agent_core.trim.message_tokens import MessageTokens
from benchmarks.synthetic import MODEL, generate

_CACHED = (tokens.token_store, tokens._counter_for_encoding, tokens.counter_for)


def _clear() -> None:
    for cached in _CACHED:
        cached.cache_clear()


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory):
    """A 300-call conversation written with no token store (its writer counts usage: none of it is stored)."""
    path = tmp_path_factory.mktemp("warmer") / "conversation.jsonl"
    old = os.environ.get("CHAIN_STUDIO_TOKEN_CACHE")
    os.environ["CHAIN_STUDIO_TOKEN_CACHE"] = "off"
    _clear()
    try:
        generate(path, 300)
    finally:
        if old is None:
            del os.environ["CHAIN_STUDIO_TOKEN_CACHE"]
        else:
            os.environ["CHAIN_STUDIO_TOKEN_CACHE"] = old
        _clear()
    return path


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty token store (no parse kept on disk: tests/conftest.py); files of any size warmed."""
    monkeypatch.setenv("CHAIN_STUDIO_TOKEN_CACHE", str(tmp_path / "tc"))
    monkeypatch.setattr(warmer, "MIN_BYTES", 0)
    _clear()
    yield tmp_path / "tc"
    snapshot.wait_detached()
    _clear()


def _alone(stream) -> list[int]:
    """Each message's count by a counter of its own, without the on-disk store (the independent figure)."""
    counter = TokenCounter(MODEL)
    counter._store = None
    return [counter.count_message(m.to_openai()) for m in stream]


def _wait_for_child(w: warmer.Warmer, messages: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while w._marks[0] < messages:
        assert time.monotonic() < deadline, "the child counted nothing"
        time.sleep(0.01)


def test_the_child_counts_from_the_start_this_process_from_the_end_and_every_count_is_tiktokens(
        fresh, trace_file, monkeypatch):
    from_store = []
    real = MessageTokens.from_store

    def spy(self, messages):
        left = real(self, messages)
        from_store.append(len(messages) - len(left))
        return left
    monkeypatch.setattr(MessageTokens, "from_store", spy)
    w = warmer.Warmer.start(trace_file)
    assert w is not None
    trace = load_any(trace_file)
    stream = trace.stream
    _wait_for_child(w, 50)         # as a parse of a big file would let it
    mt = MessageTokens(MODEL)
    w.share(stream, mt)
    assert from_store and from_store[0] >= 50          # the child's part, through the store
    assert mt.known(stream) == _alone(stream)


def test_the_child_counts_every_message_text_and_skips_ids(fresh, trace_file):
    """Run in this process to the file's end: each string a message's count encodes is in the store with
    tiktoken's count; the other ids (of events, responses, tool calls), one new string a line, are not (they cost time and no message's count encodes them)."""
    import ctypes

    marks = (ctypes.c_int64 * 2)(0, warmer._NONE_TAKEN)
    warmer._count_strings(trace_file, tokenizer(MODEL), marks, os.getppid())
    trace = load_any(trace_file)
    assert marks[0] == len(trace.stream)
    _clear()
    store = tokens.token_store(tokenizer(MODEL))
    encoding = tokens.get_encoding(tokenizer(MODEL))
    texts = {t for m in trace.stream for t in tokens._field_values(m.to_openai()) if len(t) <= TokenCounter.LONG_TEXT}
    assert len(texts) > 100
    assert all(store.get(store.digest(t)) == len(encoding.encode_ordinary(t)) for t in texts)
    ids, stack = set(), [json.loads(line) for line in trace_file.open(encoding="utf-8")]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            ids.update(v for k, v in value.items() if k in ("id", "/id") and isinstance(v, str))
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    assert len(ids) > 100 and not any(store.get(store.digest(i)) is not None for i in ids - texts)


def test_the_child_stops_when_told_and_is_reaped(fresh, trace_file):
    w = warmer.Warmer.start(trace_file)
    assert w is not None
    pid = w._pid
    cpu = w.stop()
    assert cpu >= 0.0 and w.stop() == cpu
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_not_started_where_it_cannot_pay(fresh, trace_file, tmp_path, monkeypatch):
    log = tmp_path / "payloads.jsonl"          # another format: its reader skips repeated messages unparsed
    log.write_text(json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}) + "\n")
    assert warmer.Warmer.start(log) is None
    assert warmer.Warmer.start(tmp_path / "missing.jsonl") is None
    monkeypatch.setattr(warmer, "MIN_BYTES", 8_000_000)
    assert warmer.Warmer.start(trace_file) is None             # a small file parses in no time
    monkeypatch.setattr(warmer, "MIN_BYTES", 0)
    monkeypatch.setattr(snapshot, "MIN_BYTES", 0)
    monkeypatch.setenv(snapshot.ENV, str(tmp_path / "parses"))
    load_any(trace_file)                                      # its parse kept on disk: nothing to overlap
    snapshot.wait_detached()
    assert snapshot.stored(snapshot.file_digest(trace_file))
    assert warmer.Warmer.start(trace_file) is None
    monkeypatch.setenv("CHAIN_STUDIO_TOKEN_CACHE", "off")
    _clear()
    assert warmer.Warmer.start(trace_file) is None


def _report(path, policy: str) -> str:
    out = io.StringIO()
    report.replay_file(str(path), policy, ["max_messages=40"] if policy == "max-messages" else [], out=out)
    return out.getvalue()


@pytest.mark.parametrize("policy", ["max-messages", "token-budget"])
def test_a_replay_reports_the_same_with_the_child_and_without(fresh, trace_file, tmp_path, monkeypatch, policy):
    started = []
    real = warmer.Warmer.start

    def spy(path):
        w = real(path)
        started.append(w)
        if w is not None:
            _wait_for_child(w, 50)
        return w
    monkeypatch.setattr(warmer.Warmer, "start", staticmethod(spy))
    monkeypatch.setattr(report.Warmer, "start", staticmethod(spy))
    with_child = _report(trace_file, policy)
    assert started and started[0] is not None
    monkeypatch.setenv("CHAIN_STUDIO_TOKEN_CACHE", str(tmp_path / "other"))
    monkeypatch.setattr(report.Warmer, "start", staticmethod(lambda path: None))
    _clear()
    assert _report(trace_file, policy) == with_child
