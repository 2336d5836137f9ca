"""A big stream's first replay counted by two processes (replay/counting.py): every count is what one process
counting alone makes (tiktoken through the same counter), the child's half reaches the on-disk token store, and
a child that fails or answers short is not trusted."""
from __future__ import annotations

import os

import pytest

from agent_core.replay import counting
from agent_core.trace import tokens
from agent_core.trace.synthetic import synthetic_trace
from agent_core.trace.tokens import TokenCounter
from agent_core.trim.message_tokens import MessageTokens


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty token store and counters that know nothing yet; any stream size goes to two processes."""
    monkeypatch.setenv("CHAIN_STUDIO_TOKEN_CACHE", str(tmp_path / "tc"))
    for cached in (tokens.token_store, tokens._counter_for_encoding, tokens.counter_for):
        cached.cache_clear()
    monkeypatch.setattr(counting, "MIN_MESSAGES", 0)
    monkeypatch.setattr(counting, "_idle_core", lambda: True)      # whatever else the machine runs meanwhile
    yield tmp_path / "tc"
    for cached in (tokens.token_store, tokens._counter_for_encoding, tokens.counter_for):
        cached.cache_clear()


def _alone(stream) -> list[int]:
    """Each message's count by a counter of its own, without the on-disk store (the independent figure)."""
    counter = TokenCounter("gpt-4o")
    counter._store = None
    return [counter.count_message(m.to_openai()) for m in stream]


def test_two_processes_count_what_one_does_and_the_child_stores_its_half(fresh):
    stream = synthetic_trace(60).stream
    mt = MessageTokens("gpt-4o")
    assert counting.count_in_two(stream, mt) == len(stream) // 2
    assert mt.known(stream) == _alone(stream)
    records = sum(p.stat().st_size for p in fresh.rglob("*.bin")) // 24       # 24-byte records
    assert records > 0         # the child appended its counts (this process's are flushed at its exit)
    assert counting.count_in_two(stream, mt) == 0          # all counted: nothing for a child


def test_a_failing_child_is_not_trusted(fresh, monkeypatch):
    stream = synthetic_trace(40).stream
    parent = os.getpid()
    real = MessageTokens.tokens

    def wrong_in_child(self, m):
        if os.getpid() != parent:
            raise RuntimeError("killed")
        return real(self, m)
    monkeypatch.setattr(MessageTokens, "tokens", wrong_in_child)
    mt = MessageTokens("gpt-4o")
    assert counting.count_in_two(stream, mt) == 0
    assert mt.known(stream) == _alone(stream)


def test_a_busy_machine_counts_in_one_process(fresh, monkeypatch):
    monkeypatch.setattr(counting, "_idle_core", lambda: False)
    stream = synthetic_trace(20).stream
    mt = MessageTokens("gpt-4o")
    assert counting.count_in_two(stream, mt) == 0
    assert mt.known(stream) == [None] * len(stream)          # left to the walk, as before
