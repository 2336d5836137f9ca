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
    real = MessageTokens.stream_tokens

    def wrong_in_child(self, m):
        if os.getpid() != parent:
            raise RuntimeError("killed")
        return real(self, m)
    monkeypatch.setattr(MessageTokens, "stream_tokens", wrong_in_child)
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


def test_a_stream_counted_already_still_gets_a_child_for_the_later_work(fresh, monkeypatch):
    """After the warming child (replay/warmer.py) few messages or none are left to count, yet the recorded
    retention matrix (``then``) still goes to the other core while this process walks."""
    monkeypatch.setattr(counting, "MIN_MESSAGES", 10)
    stream = synthetic_trace(30).stream
    mt = MessageTokens("gpt-4o")
    for m in stream[2:]:
        mt.tokens(m)
    child = counting.count_in_two(stream, mt, lambda: str(os.getpid()).encode())
    assert child.counted == 0                     # two messages left: counted here
    assert int(child.after()) != os.getpid()      # the later work ran in the child
    assert mt.known(stream) == _alone(stream)


def test_the_warming_childs_seconds_count_as_idle(monkeypatch):
    """The warming child kept the other core busy during the parse for this replay's sake: that core is free."""
    clock = [1000.0]
    monkeypatch.setattr(counting.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(counting.os, "getloadavg", lambda: (5.0, 5.0, 5.0))     # the fallback would say busy
    monkeypatch.setattr(counting.os, "cpu_count", lambda: 2)
    for lent, idle in ((0.0, False), (0.95, True)):
        ticks = iter([(100, 200), (100, 400)])      # no idle tick in a second of two cores: both busy
        monkeypatch.setattr(counting, "_cpu_times", lambda path="/proc/stat", ticks=ticks: next(ticks))
        counting.watch_idle()
        counting.lend(lent)
        clock[0] += 1.0
        assert counting._idle_core() is idle
