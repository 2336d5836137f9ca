"""Work a replay does in a forked child while it lints (replay/forked.py: the retention matrices), and the idle
measure that decides whether a first replay counts in two processes (replay/counting.py)."""
from __future__ import annotations

import json
import os

import pytest

from agent_core.core.paths import SAMPLE_TRACES
from agent_core.ingest import snapshot
from agent_core.replay import counting, report_writer, stored
from agent_core.replay.forked import Forked
from agent_core.replay.report import replay_file

TRACE = SAMPLE_TRACES / "long_trimmed_fact.jsonl"
PROBE = "A-2024-0715"


def test_the_childs_value_is_what_the_function_returns_here():
    parent = os.getpid()
    job = Forked(lambda: (os.getpid(), [1, "two", {"3": None}]))
    assert job.forked
    pid, value = job.result()
    assert pid != parent                    # computed by the child
    assert value == [1, "two", {"3": None}]
    assert job.result()[1] is value         # read once


def test_a_failing_child_is_computed_here():
    parent = os.getpid()

    def fn():
        if os.getpid() != parent:
            raise RuntimeError("killed")
        return "here"
    job = Forked(fn)
    assert job.forked
    assert job.result() == "here"


def test_a_child_that_exits_before_answering_is_computed_here():
    parent = os.getpid()

    def fn():
        if os.getpid() != parent:
            os._exit(0)                     # success, but no answer on the pipe
        return os.getpid()
    assert Forked(fn).result() == parent


def test_without_fork_it_is_computed_here():
    job = Forked(lambda: os.getpid(), fork=False)
    assert not job.forked
    assert job.result() == os.getpid()


def _to_file(tmp_path, name: str, policy: str = "max-messages") -> bytes:
    path = tmp_path / name
    with open(path, "w", encoding="utf-8") as out:
        replay_file(str(TRACE), policy, [], [PROBE], "json", out=out)
    return path.read_bytes()


def test_matrices_built_by_the_child_are_reported_and_stored(tmp_path, monkeypatch):
    monkeypatch.setenv(snapshot.ENV, str(tmp_path / "traces"))
    monkeypatch.setattr(snapshot, "MIN_BYTES", 0)
    alone = _to_file(tmp_path, "alone.json")          # under MIN_CALLS: one process, nothing forked
    for f in (tmp_path / "traces").glob("replay-*.json"):
        f.unlink()                                     # the first forked run computes the matrices again
    started: list = []
    real = Forked.__init__
    monkeypatch.setattr(Forked, "__init__", lambda self, *a, **k: started.append(k["fork"]) or real(self, *a, **k))
    monkeypatch.setattr(report_writer, "MIN_CALLS", 0)
    monkeypatch.setattr(counting, "_idle_core", lambda: True)       # whatever else the machine runs meanwhile
    first = _to_file(tmp_path, "first.json")
    snapshot.wait_detached()
    assert started == [True]
    assert first == alone
    doc = json.loads((tmp_path / "traces").glob("replay-*.json").__next__().read_bytes().split(b"\n", 1)[1])
    (entry,) = doc["retention"].values()                # the child's part reached this process's save
    assert entry["masks"] and all(type(m) is int for m in entry["masks"])
    recorded = json.loads(alone)["probes"][PROBE]["recorded"]
    assert entry["matrix"]["rows"][0]["first_gone"] == recorded["first_gone"]
    computed: list = []
    real_rr = stored.recorded_retention
    monkeypatch.setattr(stored, "recorded_retention", lambda *a: computed.append(1) or real_rr(*a))
    monkeypatch.setattr(report_writer, "MIN_CALLS", 10**9)      # in this process: the stored matrix is read
    assert _to_file(tmp_path, "again.json") == alone
    assert computed == []


def test_a_busy_machine_builds_the_matrices_in_one_process(tmp_path, monkeypatch):
    forks: list = []
    real = Forked.__init__
    monkeypatch.setattr(Forked, "__init__", lambda self, *a, **k: forks.append(k["fork"]) or real(self, *a, **k))
    monkeypatch.setattr(report_writer, "MIN_CALLS", 0)
    monkeypatch.setattr(counting, "_idle_core", lambda: False)
    alone = _to_file(tmp_path, "busy.json", "summary-window")
    assert forks == [False]
    assert json.loads(alone)["probes"][PROBE]["recorded"]["why"]


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


def _watched(monkeypatch, ticks, children=(0.0, 0.0), seconds=1.0):
    """``_idle_core`` after ``seconds`` of watching, with these /proc/stat samples and own children's CPU."""
    ticks, children = iter(ticks), iter(children)
    monkeypatch.setattr(counting, "_cpu_times", lambda: next(ticks))
    monkeypatch.setattr(counting, "_children_cpu", lambda: next(children))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (5.0, 5.0, 5.0))     # the minute before was busy
    counting.watch_idle()
    counting._since[0] = (counting._since[0][0], counting._since[0][1] - seconds, counting._since[0][2])
    return counting._idle_core()


def test_a_free_core_measured_since_the_parse_started(monkeypatch):
    assert _watched(monkeypatch, [(1000, 2000), (1090, 2200)])          # 90 of 200 ticks idle: 0.9 of 2 cores
    assert not _watched(monkeypatch, [(1000, 2000), (1010, 2200)])      # 10 of 200: the other core was busy too


def test_own_childrens_cpu_is_not_someone_elses(monkeypatch):
    # 20 of 200 ticks idle: 0.2 cores; but this process's counting child used 0.8 s of the 1 s: 1.0 core free
    assert _watched(monkeypatch, [(1000, 2000), (1020, 2200)], children=(3.0, 3.8))
    assert not _watched(monkeypatch, [(1000, 2000), (1020, 2200)], children=(3.0, 3.1))


def test_a_short_watch_asks_the_load_average(monkeypatch):
    assert not _watched(monkeypatch, [(1000, 2000), (1090, 2200)], seconds=0.0)     # load 5.0 on 2 cores
