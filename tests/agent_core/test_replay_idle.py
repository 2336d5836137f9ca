"""The idle measure that decides whether a first replay counts its stream in two processes (replay/counting.py):
``/proc/stat`` read as proc(5) lays it out, and measured since the parse began rather than by the load average."""
from __future__ import annotations

import os

import pytest

from agent_core.replay import counting


@pytest.mark.parametrize(("before", "after", "cpus", "idle"), [
    # proc(5): "cpu user nice system idle iowait irq softirq steal"; idle and iowait are idle time
    ("cpu 100 0 50 1000 10 0 0 0 0 0", "cpu 200 0 50 1090 20 0 0 0 0 0", 2, 2 * 100 / 200),
    ("cpu 100 0 50 1000 10 0 0 0 0 0", "cpu 300 0 50 1000 10 0 0 0 0 0", 2, 0.0),
    ("cpu 0 0 0 0 0 0 0 0", "cpu 25 0 0 75 0 0 0 0", 4, 3.0),
])
def test_idle_cores_from_two_proc_stat_samples(tmp_path, before, after, cpus, idle):
    samples = []
    for i, line in enumerate((before, after)):
        path = tmp_path / f"stat{i}"
        path.write_text(line + "\ncpu0 1 2 3 4\n")
        samples.append(counting._cpu_times(str(path)))
    assert counting.idle_cores(samples[0], samples[1], cpus) == pytest.approx(idle)


def test_the_machines_own_proc_stat_reads():
    assert counting._cpu_times() is None or all(v >= 0 for v in counting._cpu_times())


def test_an_unreadable_or_foreign_stat_is_no_measure(tmp_path):
    (tmp_path / "stat").write_text("intr 1 2 3\n")
    assert counting._cpu_times(str(tmp_path / "stat")) is None
    assert counting._cpu_times(str(tmp_path / "missing")) is None


def _watched(monkeypatch, ticks, seconds=1.0):
    """``_idle_core`` after ``seconds`` of watching, with these /proc/stat samples."""
    ticks = iter(ticks)
    monkeypatch.setattr(counting, "_cpu_times", lambda: next(ticks))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (5.0, 5.0, 5.0))     # the minute before was busy
    counting.watch_idle()
    counting._since[0] = (counting._since[0][0], counting._since[0][1] - seconds)
    return counting._idle_core()


def test_a_free_core_measured_since_the_parse_started(monkeypatch):
    assert _watched(monkeypatch, [(1000, 2000), (1090, 2200)])          # 90 of 200 ticks idle: 0.9 of 2 cores
    assert not _watched(monkeypatch, [(1000, 2000), (1010, 2200)])      # 10 of 200: the other core was busy too


def test_a_short_watch_asks_the_load_average(monkeypatch):
    assert not _watched(monkeypatch, [(1000, 2000), (1090, 2200)], seconds=0.0)     # load 5.0 on 2 cores
