"""Parsed traces kept on disk (ingest/snapshot.py): the same trace as a parse, never trusted when damaged or
planted, never making the command that parsed wait."""
from __future__ import annotations

import hashlib
import os
import pickle
import subprocess
import sys
import time

import pytest

from agent_core.core.paths import PROJECT_ROOT, SAMPLE_TRACES
from agent_core.ingest import snapshot
from agent_core.ingest.detect import load_any

TRACE = SAMPLE_TRACES / "long_trimmed_fact.jsonl"


@pytest.fixture
def store(tmp_path, monkeypatch):
    """Snapshots on, in ``tmp_path/traces``, for files of any size."""
    monkeypatch.setenv(snapshot.ENV, str(tmp_path / "traces"))
    monkeypatch.setattr(snapshot, "MIN_BYTES", 0)
    yield tmp_path / "traces"
    snapshot.wait_detached()


def _stored(store) -> list:
    return sorted(store.glob("trace-*.pickle"))


def _fields(trace) -> list:
    """Every call's fields and messages as sent, every stream message's lineage, the warnings and metadata."""
    calls = [(c.index, c.request, c.response, c.status, c.error, c.latency_ms, c.started_at, c.purpose,
              c.message_ids, c.messages) for c in trace.calls]
    stream = [(m.id, m.parent_id, m.timestamp, m.to_openai()) for m in trace.stream]
    return [calls, stream, [repr(e) for e in trace.events], trace.warnings, repr(trace.meta)]


def _same(a, b) -> bool:
    return _fields(a) == _fields(b)


def test_a_second_load_comes_from_the_snapshot_and_equals_the_parse(store, monkeypatch):
    parsed = load_any(TRACE)
    snapshot.wait_detached()
    assert len(_stored(store)) == 1
    monkeypatch.setattr("agent_core.ingest.detect.parse_any", lambda *a, **k: pytest.fail("parsed again"))
    seen = []
    loaded = load_any(TRACE, progress=lambda done, total, calls: seen.append((done, total, calls)))
    assert _same(loaded, parsed)
    assert [m.id for m in loaded.stream] == [m.id for m in parsed.stream]
    assert seen == [(TRACE.stat().st_size,) * 2 + (len(parsed.calls),)]     # a hit still reports its end


def test_other_bytes_or_other_code_never_reuse_a_snapshot(store, tmp_path, monkeypatch):
    load_any(TRACE)
    snapshot.wait_detached()
    changed = tmp_path / "changed.jsonl"
    changed.write_bytes(TRACE.read_bytes().replace("深圳".encode(), "广州".encode()))
    assert "广州".encode() in changed.read_bytes()
    assert "广州" in str([c.messages for c in load_any(changed).calls])
    snapshot.wait_detached()
    assert len(_stored(store)) == 2
    monkeypatch.setattr(snapshot, "code_digest", lambda: "other code")
    assert snapshot.load(snapshot.file_digest(TRACE)) is None


def test_a_damaged_snapshot_is_removed_and_the_file_parsed(store):
    parsed = load_any(TRACE)
    snapshot.wait_detached()
    [path] = _stored(store)
    data = bytearray(path.read_bytes())
    data[-10] ^= 0xFF
    path.write_bytes(bytes(data))
    assert _same(load_any(TRACE), parsed)
    snapshot.wait_detached()
    assert _stored(store) == [path]          # removed, then written again from the parse
    assert snapshot.load(snapshot.file_digest(TRACE)) is not None


class _Planted:
    def __init__(self, call, marker):
        self.call, self.marker = call, marker

    def __reduce__(self):
        return self.call(self.marker)


@pytest.mark.parametrize("call", [
    lambda marker: (os.system, (f"touch {marker}",)),
    # a class of the trace layer whose constructor writes (creates the directory of its file): not a record
    lambda marker: (__import__("agent_core.trace.writer", fromlist=["TraceWriter"]).TraceWriter,
                    (str(marker / "trace.jsonl"),)),
], ids=["os.system", "TraceWriter"])
def test_a_planted_pickle_is_refused_not_run(store, tmp_path, call):
    """A file with a valid checksum that names something other than a trace's records is not loaded: what it
    names is never called."""
    load_any(TRACE)
    snapshot.wait_detached()
    [path] = _stored(store)
    planted = _Planted(call, tmp_path / "ran")
    body = pickle.dumps(planted)
    path.write_bytes(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    assert load_any(TRACE).calls
    assert not planted.marker.exists()


def test_a_directory_others_can_write_is_not_read(store):
    load_any(TRACE)
    snapshot.wait_detached()
    assert snapshot.load(snapshot.file_digest(TRACE)) is not None
    os.chmod(store, 0o777)
    assert snapshot.load(snapshot.file_digest(TRACE)) is None
    assert _stored(store), "not removed either: only ignored"


def test_off_and_small_files_keep_nothing(store, monkeypatch):
    monkeypatch.setattr(snapshot, "MIN_BYTES", TRACE.stat().st_size + 1)
    load_any(TRACE)
    monkeypatch.setattr(snapshot, "MIN_BYTES", 0)
    monkeypatch.setenv(snapshot.ENV, "off")
    load_any(TRACE)
    snapshot.wait_detached()
    assert not store.exists()


def test_the_cli_returns_without_waiting_for_the_snapshot(store, tmp_path):
    """``chain-studio lint`` prints and exits while its forked child writes the snapshot: the child holds none of
    the command's output streams (a caller reading them to the end would wait for it otherwise)."""
    env = {**os.environ, snapshot.ENV: str(store), "PYTHONPATH": str(PROJECT_ROOT)}
    code = ("import sys; from agent_core.ingest import snapshot; snapshot.MIN_BYTES = 0; "
            "import time; real = snapshot.save; "
            "snapshot.save = lambda *a: (time.sleep(3), real(*a))[1]; "
            "from agent_core.cli.main import main; sys.exit(main(sys.argv[1:]))")
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code, "lint", str(TRACE)], capture_output=True, text=True,
                         env=env, timeout=60)
    took = time.monotonic() - start
    assert out.returncode in (0, 1), out.stderr
    assert "long_trimmed_fact" in out.stdout or out.stdout
    assert took < 3, f"the command waited for its snapshot child ({took:.1f} s)"
    for _ in range(100):
        if _stored(store):
            break
        time.sleep(0.1)
    assert len(_stored(store)) == 1


def _children() -> dict[str, str]:
    out = subprocess.run(["ps", "-o", "pid=,stat=,comm=", "--ppid", str(os.getpid())], capture_output=True, text=True)
    rows = [line.split(None, 2) for line in out.stdout.splitlines() if line.strip()]
    return {pid: stat for pid, stat, comm in rows if comm != "ps"}


def test_a_long_lived_process_keeps_no_zombie(store):
    """A studio server forks one child per big file it parses: each is waited for when it ends, without anyone
    asking (no ``<defunct>`` child left under the server)."""
    before = _children()
    load_any(TRACE)
    for _ in range(100):
        new = {pid: stat for pid, stat in _children().items() if pid not in before}
        if not new:
            break
        time.sleep(0.1)
    assert not new, f"children left: {new}"
    assert _stored(store)
