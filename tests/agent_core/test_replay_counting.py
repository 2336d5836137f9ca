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
    child = counting.count_in_two(stream, mt).counted
    assert 0 < child < len(stream)
    assert mt.known(stream) == _alone(stream)
    records = sum(p.stat().st_size for p in fresh.rglob("*.bin")) // 24       # 24-byte records
    assert records > 0         # the child appended its counts (this process's are flushed at its exit)
    assert counting.count_in_two(stream, mt).counted == 0          # all counted: nothing for a child


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
    assert counting.count_in_two(stream, mt).counted == 0
    assert mt.known(stream) == _alone(stream)


def test_a_busy_machine_counts_in_one_process(fresh, monkeypatch):
    monkeypatch.setattr(counting, "_idle_core", lambda: False)
    stream = synthetic_trace(20).stream
    mt = MessageTokens("gpt-4o")
    assert counting.count_in_two(stream, mt).counted == 0
    assert mt.known(stream) == [None] * len(stream)          # left to the walk, as before


def test_the_halves_hold_about_the_same_text_whatever_the_order_of_roles():
    """Every second message of the synthetic conversation would give one process the tool results (measured: the
    parent then waited 0.8 s for its child at 25,000 calls); the halves differ by at most one message's text."""
    stream = synthetic_trace(200).stream
    mine, theirs = counting.halves(stream)
    assert sorted(map(id, mine + theirs)) == sorted(map(id, stream))
    assert [stream.index(m) for m in mine] == sorted(stream.index(m) for m in mine)

    def text(ms):
        return sum(len(m.content) for m in ms if isinstance(m.content, str))
    every_second = abs(text(stream[0::2]) - text(stream[1::2]))
    largest = max(len(m.content) for m in stream if isinstance(m.content, str))
    assert abs(text(mine) - text(theirs)) <= largest + 64 < every_second
