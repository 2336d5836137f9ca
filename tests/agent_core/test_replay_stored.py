"""What every replay of a trace computes alike, stored beside its parsed trace (replay/stored.py): a second
replay reads it instead of computing it (counted in work units, not seconds), reports exactly what a replay
without the store reports, and never trusts a damaged, ill-fitting or exposed file. And the report's messages
written by a forked child (replay/report_writer.py): the same bytes, and a failed child fails the command."""
from __future__ import annotations

import hashlib
import io
import json
import os
import re
from types import SimpleNamespace

import pytest

from agent_core.core.paths import SAMPLE_TRACES
from agent_core.ingest import snapshot
from agent_core.replay import stored
from agent_core.replay.report import replay_file

TRACE = SAMPLE_TRACES / "long_trimmed_fact.jsonl"
PROBE = "A-2024-0715"


@pytest.fixture
def store(tmp_path, monkeypatch):
    """The trace and replay stores on, in ``tmp_path/traces``, for files of any size; ``.facts``: every
    ``TraceFacts`` a replay used, in order."""
    monkeypatch.setenv(snapshot.ENV, str(tmp_path / "traces"))
    monkeypatch.setattr(snapshot, "MIN_BYTES", 0)
    used: list[stored.TraceFacts] = []
    real_save = stored.TraceFacts.save

    def save(self):
        used.append(self)
        return real_save(self)
    monkeypatch.setattr(stored.TraceFacts, "save", save)
    yield SimpleNamespace(root=tmp_path / "traces", facts=used)
    snapshot.wait_detached()


def _replay(policy: str, *params: str) -> str:
    out = io.StringIO()
    replay_file(str(TRACE), policy, list(params), [PROBE], "json", out=out)
    return out.getvalue()


def _without_store(policy: str, *params: str, monkeypatch) -> str:
    with monkeypatch.context() as m:
        m.setenv(snapshot.ENV, "off")
        return _replay(policy, *params)


def _files(root) -> list:
    return sorted(root.glob("replay-*.json"))


def _count_recorded(monkeypatch) -> list:
    """Calls of the recorded matrix's computation from here on."""
    calls: list = []
    real = stored.recorded_retention
    monkeypatch.setattr(stored, "recorded_retention", lambda *a: calls.append(1) or real(*a))
    return calls


def test_a_second_replay_reads_the_stored_facts_and_reports_the_same(store, monkeypatch):
    expected = {p: _without_store(p, monkeypatch=monkeypatch) for p in ("max-messages", "token-budget")}
    assert json.loads(expected["max-messages"])["probes"][PROBE]["recorded"]["first_gone"] == 20   # docs/replay.md

    first = _replay("max-messages")
    assert first == expected["max-messages"]
    assert store.facts[-1].reads == 0
    [path] = _files(store.root)
    assert path.stat().st_mode & 0o777 == 0o600 and store.root.stat().st_mode & 0o777 == 0o700

    computed = _count_recorded(monkeypatch)
    assert _replay("token-budget") == expected["token-budget"]      # another policy: the same stored facts
    assert _replay("max-messages") == first
    assert computed == []                       # the recorded matrix was read, not computed
    assert [f.reads for f in store.facts[-2:]] == [2, 2]      # the stream's counts and the retention entry
    assert [f.changed for f in store.facts[-2:]] == [False, False] and _files(store.root) == [path]


def _rewrite(path, change) -> None:
    """Change the stored document and write it back with a valid hash (a well-formed file that does not fit)."""
    data = path.read_bytes()
    doc = json.loads(data[65:])
    change(doc)
    body = json.dumps(doc).encode()
    path.write_bytes(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)


@pytest.mark.parametrize("damage", [
    "flipped byte", "truncated", "counts of another length", "mask of a probe that is not there",
    "present of another length", "drop of the wrong type", "another trace's calls"])
def test_a_damaged_or_ill_fitting_file_is_computed_again_never_trusted(store, monkeypatch, damage):
    first = _replay("naive-drop-oldest")
    [path] = _files(store.root)
    if damage == "flipped byte":
        data = bytearray(path.read_bytes())     # a count's digit: still JSON that fits, only the hash can tell
        at = data.index(b'"stream":[', data.index(b'"counts"')) + 10
        data[at] = ord("7") if data[at] != ord("7") else ord("8")
        path.write_bytes(bytes(data))
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:100])
    else:
        def change(doc):
            (counts,) = (c["stream"] for c in doc["counts"].values())
            (entry,) = doc["retention"].values()
            row = entry["matrix"]["rows"][0]
            if damage == "counts of another length":
                counts.append(5)
            elif damage == "mask of a probe that is not there":
                entry["masks"][3] = 2
            elif damage == "present of another length":
                row["present"] += "1"
            elif damage == "drop of the wrong type":
                row["dropped_by"] = {"msg_id": "x"}
            else:
                doc["calls"] = doc["calls"][1:]
        _rewrite(path, change)
    computed = _count_recorded(monkeypatch)
    assert _replay("naive-drop-oldest") == first
    facts = store.facts[-1]
    whole_file = damage in ("flipped byte", "truncated", "another trace's calls")
    assert facts.reads == (0 if whole_file else 1)       # the part that fits is still used
    assert computed == ([] if damage == "counts of another length" else [1])
    [again] = _files(store.root)                               # rewritten whole and valid
    data = again.read_bytes()
    assert hashlib.sha256(data[65:]).hexdigest().encode() == data[:64]
    computed.clear()
    assert _replay("naive-drop-oldest") == first and store.facts[-1].reads == 2 and computed == []


def test_a_directory_others_can_write_to_is_neither_read_nor_written(store, monkeypatch):
    first = _replay("sliding-window")
    [path] = _files(store.root)
    before = path.read_bytes()
    os.chmod(store.root, 0o777)
    try:
        computed = _count_recorded(monkeypatch)
        _rewrite(path, lambda doc: doc["counts"].clear())    # a change the next run would have to put back
        changed = path.read_bytes()
        assert _replay("sliding-window") == first
        assert store.facts[-1].reads == 0 and computed == [1]
        assert path.read_bytes() == changed != before        # not written either
    finally:
        os.chmod(store.root, 0o700)


def test_off_or_a_small_file_stores_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(snapshot.ENV, str(tmp_path / "traces"))      # on, but the sample is under MIN_BYTES
    assert snapshot.MIN_BYTES > TRACE.stat().st_size
    _replay("keep-all")
    assert not (tmp_path / "traces").exists() or _files(tmp_path / "traces") == []


# --- the report's messages written by a forked child (replay/report_writer.py) -----------------------------


def _to_file(tmp_path, policy: str, name: str) -> bytes:
    path = tmp_path / name
    with open(path, "w", encoding="utf-8") as out:
        replay_file(str(TRACE), policy, [], [PROBE], "json", out=out)
    return path.read_bytes()


@pytest.mark.parametrize("policy", ["naive-drop-oldest", "summary-window", "anthropic-clear-tool-uses"])
def test_the_forked_writer_writes_the_same_bytes_as_one_process(tmp_path, monkeypatch, policy):
    from agent_core.replay import report_writer

    started: list = []
    real = report_writer.HeadWriter.__init__
    monkeypatch.setattr(report_writer.HeadWriter, "__init__",
                        lambda self, *a: started.append(1) or real(self, *a))
    alone = _to_file(tmp_path, policy, "alone.json")            # the sample is far under MIN_CALLS
    assert started == []
    monkeypatch.setattr(report_writer, "MIN_CALLS", 0)
    forked = _to_file(tmp_path, policy, "forked.json")
    assert started == [1]
    if policy == "summary-window":       # each running summary has a fresh random id
        alone, forked = (re.sub(rb"summary_[0-9a-f]+-[0-9a-f]+", b"summary", x) for x in (alone, forked))
    assert forked == alone
    json.loads(forked)


def test_a_child_that_fails_fails_the_command(tmp_path, monkeypatch):
    from agent_core.core.errors import ChainStudioError
    from agent_core.replay import json_out, report_writer

    monkeypatch.setattr(report_writer, "MIN_CALLS", 0)
    parent = os.getpid()
    real = json_out.write_members

    def broken(*a, **k):
        if os.getpid() != parent:
            raise OSError("disk full")
        return real(*a, **k)
    monkeypatch.setattr(report_writer, "write_members", broken)
    with pytest.raises(ChainStudioError, match="replay report failed"):
        _to_file(tmp_path, "max-messages", "broken.json")


def _replayed_matrices_here(monkeypatch) -> list[int]:
    """The pids of this process each time it computes a replayed retention matrix (a forked child's calls land in
    its own copy of the list)."""
    from agent_core.replay import report

    here: list[int] = []
    real = report.replay_retention
    monkeypatch.setattr(report, "replay_retention", lambda *a: here.append(os.getpid()) or real(*a))
    return here


def test_the_forked_writer_builds_the_replayed_matrix_beside_the_linter(tmp_path, monkeypatch):
    from agent_core.replay import report_writer

    alone = _to_file(tmp_path, "max-messages", "alone.json")
    here = _replayed_matrices_here(monkeypatch)
    monkeypatch.setattr(report_writer, "MIN_CALLS", 0)
    forked = _to_file(tmp_path, "max-messages", "forked.json")
    assert here == []       # the child's, pickled back
    assert forked == alone
    assert json.loads(forked)["probes"][PROBE]["first_gone"] is not None


def test_a_matrix_the_child_could_not_build_is_built_here(tmp_path, monkeypatch):
    from agent_core.replay import probes, report_writer

    alone = _to_file(tmp_path, "max-messages", "alone.json")
    parent = os.getpid()
    real = probes.replay_retention

    def broken(*a):
        if os.getpid() != parent:
            raise MemoryError("the child ran out")
        return real(*a)
    monkeypatch.setattr(report_writer, "MIN_CALLS", 0)
    monkeypatch.setattr("agent_core.replay.report.replay_retention", broken)
    here = _replayed_matrices_here(monkeypatch)
    assert _to_file(tmp_path, "max-messages", "forked.json") == alone
    assert here == [parent]


def test_a_first_replay_counting_in_two_processes_takes_the_recorded_matrix_from_the_child(store, monkeypatch):
    """replay/counting.py: once its half is counted, the child builds the recorded retention entry while this
    process walks; the report is the one-process report, the entry is stored and read by the next replay."""
    from agent_core.replay import counting

    expected = _without_store("max-messages", monkeypatch=monkeypatch)
    monkeypatch.setattr(counting, "MIN_MESSAGES", 0)
    monkeypatch.setattr(counting, "_idle_core", lambda: True)
    computed_here = _count_recorded(monkeypatch)        # the child's calls land in its own copy of the list
    assert _replay("max-messages") == expected
    assert computed_here == []
    assert store.facts[-1].reads == 0
    [path] = _files(store.root)
    assert len(json.loads(path.read_bytes()[65:])["retention"]) == 1
    assert _replay("max-messages") == expected
    assert store.facts[-1].reads == 2 and computed_here == []


@pytest.mark.parametrize("computed", [b"{not json", b"[]", b'{"masks": [1], "matrix": {}}'])
def test_an_ill_formed_matrix_from_the_child_is_computed_here(store, computed):
    from agent_core.ingest.detect import load_any
    from agent_core.replay.probes import probe_from_text, recorded_retention

    trace = load_any(str(TRACE))
    probes = [probe_from_text(PROBE)]
    facts = stored.TraceFacts.open(TRACE, trace)
    expected = stored._matrix_json(recorded_retention(trace, probes))
    assert stored._matrix_json(facts.recorded_retention(trace, probes, computed)) == expected
    assert facts.doc["retention"][stored.probes_key(probes)]["matrix"] == expected
