"""The studio's kept replays: bounded by the calls they replayed, the page's columns and the newest never evicted."""
from __future__ import annotations

import threading
import time

import pytest

from agent_core.core.paths import SAMPLE_TRACES
from agent_core.ingest.detect import load_any
from studio import replay_services as rs
from studio.replay_cache import ReplayCache


def _cache(max_calls: int = 100, max_entries: int = 10) -> ReplayCache:
    return ReplayCache(max_calls, max_entries, weight=len)


def test_the_least_recently_used_go_once_the_older_ones_weigh_more_than_the_budget():
    cache = _cache(max_calls=50)
    for key in "abc":
        cache.get(key, lambda: [0] * 40)       # a and b, older than c, weigh 80 > 50: "a" goes
    assert cache.keys() == ["b", "c"]
    cache.get("b", lambda: pytest.fail("b is kept: not computed again"))    # b is now the newest
    cache.get("d", lambda: [0] * 40)           # c and b = 80: c (least recently used) goes
    assert cache.keys() == ["b", "d"]


def test_the_pinned_and_the_newest_stay_whatever_they_weigh_and_entries_are_capped():
    cache = _cache(max_calls=10)
    cache.pin(["a", "b"])
    for key in "abc":
        cache.get(key, lambda: [0] * 50)
    assert cache.keys() == ["a", "b", "c"]     # 150 > 10: a and b are the page's columns, c the newest
    cache.get("d", lambda: [0])
    assert cache.keys() == ["a", "b", "d"]
    cache.pin(["d"])                           # the page shows other columns: a and b may go now
    assert cache.keys() == ["d"]
    light = _cache(max_calls=1_000, max_entries=3)
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


def test_trying_every_policy_keeps_the_columns_and_drops_the_others_past_the_budget(monkeypatch):
    """The page's replays of one trace under every policy, one column changed each time beside token-budget: past
    the budget (here one replay's calls besides the columns) the least recently used go, the columns shown never;
    a dropped one is no longer referenced, and replayed again when asked for."""
    import weakref

    trace = load_any(SAMPLE_TRACES / "long_trimmed_fact.jsonl")

    class Loaded:
        digest = "d" * 64

    Loaded.trace = trace
    calls = len(trace.calls)
    monkeypatch.setattr(rs, "_KEPT", ReplayCache(calls, max_entries=48, weight=lambda r: len(r.calls)))
    budget = rs.default_spec("token-budget")
    names = ["keep-all", "max-messages", "sliding-window", "summary-window"]
    first = {}
    for name in names:
        columns = [rs.default_spec(name), budget]
        rs.show_columns(Loaded, columns, None, "openai")
        first[name] = weakref.ref(rs.replay(Loaded, columns[0]))
        rs.replay(Loaded, budget)
    kept = [key[1].name for key in rs._KEPT.keys()]
    assert kept == ["sliding-window", "summary-window", "token-budget"]
    assert first["keep-all"]() is None and first["summary-window"]() is not None       # freed at once: acyclic
    assert rs.replayed(Loaded, rs.default_spec("summary-window"))
    assert not rs.replayed(Loaded, rs.default_spec("keep-all"))
    again = rs.replay(Loaded, rs.default_spec("keep-all"))
    assert again.totals == rs._run(trace, rs.default_spec("keep-all"), rs.pricing(Loaded), "openai").totals


def test_a_replay_the_server_dropped_is_freed_though_a_page_run_showed_it(open_studio, monkeypatch):
    """A page run's names outlive it when a computation during the run froze them (core/heap.py): the Replay page
    keeps its replays in ``_KEPT`` only, so one picked away from and dropped is freed at once (no collection)."""
    import weakref

    from studio import view_store

    monkeypatch.setenv(view_store.ENV, "off")
    monkeypatch.setattr(rs, "_KEPT", ReplayCache(1, max_entries=48, weight=lambda r: len(r.calls)))
    made: list = []
    real = rs._run
    monkeypatch.setattr(rs, "_run", lambda *a: made.append((a[1].name, weakref.ref(r := real(*a)))) or r)
    at = open_studio(SAMPLE_TRACES / "long_trimmed_fact.jsonl", "screens/replay.py")
    for name in ("keep-all", "sliding-window", "summary-window"):
        at.selectbox(key="replay_policy_0").set_value(name).run()
        assert not at.exception, [e.message for e in at.exception]
    alive = sorted(name for name, ref in made if ref() is not None)
    assert alive == ["summary-window", "token-budget"], alive
