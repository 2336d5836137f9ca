"""The studio's kept replays: bounded by the calls they replayed, the page's columns never evicted."""
from __future__ import annotations

import threading
import time

import pytest

from agent_core.core.paths import SAMPLE_TRACES
from agent_core.ingest.detect import load_any
from studio import replay_services as rs
from studio.replay_cache import ReplayCache


def _cache(max_calls: int = 100, keep_recent: int = 2, max_entries: int = 10) -> ReplayCache:
    return ReplayCache(max_calls, keep_recent, max_entries, weight=len)


def test_the_least_recently_used_go_once_the_kept_ones_weigh_more_than_the_budget():
    cache = _cache(max_calls=100)
    for key in "abc":
        cache.get(key, lambda: [0] * 40)       # 40 + 40 + 40 = 120 > 100: "a" goes
    assert cache.keys() == ["b", "c"]
    cache.get("b", lambda: pytest.fail("b is kept: not computed again"))    # b is now the newest
    cache.get("d", lambda: [0] * 40)           # b, c, d = 120: c (least recently used) goes
    assert cache.keys() == ["b", "d"]


def test_the_newest_stay_whatever_they_weigh_and_entries_are_capped():
    cache = _cache(max_calls=10, keep_recent=2, max_entries=3)
    cache.get("a", lambda: [0] * 50)
    cache.get("b", lambda: [0] * 50)
    assert cache.keys() == ["a", "b"]          # 100 > 10, but the two newest stay (the page's columns)
    light = _cache(max_calls=1_000, keep_recent=1, max_entries=3)
    for key in "abcd":
        light.get(key, lambda: [0])
    assert light.keys() == ["b", "c", "d"]


def test_a_value_under_way_is_waited_for_not_computed_twice():
    cache = _cache()
    computed = []

    def slow() -> list:
        computed.append(1)
        time.sleep(0.3)
        return [1]
    got = []
    threads = [threading.Thread(target=lambda: got.append(cache.get("k", slow))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert computed == [1] and len(got) == 3 and all(g is got[0] for g in got)


def test_a_failed_computation_keeps_nothing_and_the_next_ask_computes_again():
    cache = _cache()

    def fail() -> list:
        raise ValueError("no")
    with pytest.raises(ValueError):
        cache.get("k", fail)
    assert "k" not in cache and cache.get("k", lambda: [2]) == [2]


def test_trying_every_policy_keeps_the_newest_replays_within_the_budget(monkeypatch):
    """The page's replays of one trace under every policy: the oldest are dropped past the budget (here 3 replays'
    calls), the four newest (the page's columns) are kept, and a dropped one is replayed again when asked for."""
    trace = load_any(SAMPLE_TRACES / "long_trimmed_fact.jsonl")

    class Loaded:
        digest = "d" * 64

    Loaded.trace = trace
    calls = len(rs.replay(Loaded, rs.default_spec("keep-all")).calls)
    monkeypatch.setattr(rs, "_KEPT", ReplayCache(3 * calls, keep_recent=2, max_entries=48, weight=lambda r: len(r.calls)))
    names = ["keep-all", "max-messages", "sliding-window", "token-budget", "summary-window"]
    first = {name: rs.replay(Loaded, rs.default_spec(name)) for name in names}
    kept = [key[1].name for key in rs._KEPT.keys()]
    assert kept == names[-3:]
    assert rs.replayed(Loaded, rs.default_spec("summary-window")) and not rs.replayed(Loaded, rs.default_spec("keep-all"))
    again = rs.replay(Loaded, rs.default_spec("keep-all"))
    assert again is not first["keep-all"] and again.totals == first["keep-all"].totals
    assert rs.replay(Loaded, rs.default_spec("summary-window")) is first["summary-window"]
