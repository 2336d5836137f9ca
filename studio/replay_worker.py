"""A big trace's Replay page, first visit, computed in a separate process and kept in the view store.

The Replay page's first visit needs two whole replays of the trace under its default columns (the walk, then the
linter on every rebuilt payload: seconds each at 25,000 calls), the retention matrices and the "why did it forget?"
stories derived from them. Computed on a thread of the server (round 6, ``studio/warmup.py``), that Python work held
the GIL while the pages ran: at 25,000 calls the Replay page visited at once took 3.6 s (100 calls: 0.9 s) and the
Timeline's next call 1.6 s. So the server starts ``python -m studio.replay_worker FILE DIGEST --profile P`` (``start``):
a process of its own (the machine's other core, niced) that reads the same file (the parse kept on disk where there
is one), replays it under ``replay_services.default_specs`` with the pages' own code, derives what the page shows
(``studio/viewmodels/replay_first.py``: totals, the token lines at screen resolution, the retention heatmap, the
stories in every language, the last call of each policy) and stores that view in the view store (kind
``replay-first``, by trace digest, profile and the digest of the studio's code besides the view store's own). The
server only reads it back (``view``); the page renders from it exactly as from replays of its own, and replays on
demand whatever else it is asked (another call, policy, price, probe, an opened expander, a re-send).

- Started once per trace digest, profile and server, when the first open of the trace is done. It first sleeps
  until the trace's token worker (``--after PID``) has stored its series (the Timeline's next long call waits for
  that series: nothing here competes with it); then what needs no token count (imports, the parse, the proposed
  probes, the recorded retention), while the token worker finishes the Tokens page's views; then it waits for that
  worker to exit before it replays: the per-text counts it flushed to the token store are read, not encoded twice.
  Not for bytes in the session, a redacted view or with the view store off (``studio/warmup.py`` then replays on
  a thread as before), nor when the view is stored already.
- The worker checks that the file still has the digest it was started for (before reading, and size and mtime
  after); a file that changed is an error, nothing is stored.
- It exits when the server does (it watches its parent's pid; the server terminates its workers at exit).
- A failure (non-zero exit, nothing stored) is kept with its last stderr line (``failure``): the page says it and
  replays itself. A stored view that is damaged or of another shape is replayed again, never trusted.
"""
from __future__ import annotations

import argparse
import ctypes
import gc
import hashlib
import mmap
import os
import sys
import threading
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from agent_core.core.caches import file_sha256, source_digest
from studio import view_store
from studio.phases import mark
from studio.viewmodels import replay_first
from studio.worker_process import Worker, attach, run_reporting

KIND = "replay-first"
"""The view store's kind for the Replay page's first-visit view."""
LANGS = ("en", "zh")
"""The languages whose stories the worker stores (the page's language switch)."""
NICE = 19
"""The worker's niceness: the server's page runs and the browser come first when both cores are busy (the token
worker's, ``token_worker.NICE``)."""
PARENT_POLL_S = 0.5
"""How often the worker checks that the server that started it is alive."""
POLL_S = 0.05
"""How often a page waiting for the worker checks whether it has exited."""


@lru_cache(maxsize=1)
def _studio_digest() -> str:
    """The studio's own code (the view store's key covers agent_core and studio/viewmodels only)."""
    return source_digest(["studio"])


def _slot(profile: str) -> str:
    return hashlib.sha256(f"{profile}\0{_studio_digest()}".encode()).hexdigest()


_views: dict[tuple[str, str, int], replay_first.FirstView] = {}
"""Views read back, by trace digest, slot and policies: a stored view is the same whatever process computed it
(its key covers the code), so each is read and checked once per server (0.1 s at 25,000 calls), by the page's first
visit or before it (``warmup.first_view_ahead``). Dropped with the traces (``forget_views``)."""


def stored_view(digest: str, profile: str, policies: int) -> replay_first.FirstView | None:
    """The view stored for this trace, profile (and code), or None (absent, off, damaged or mis-shaped)."""
    key = (digest, _slot(profile), policies)
    view = _views.get(key)
    if view is None:
        view = replay_first.parse(view_store.load(KIND, digest, key[1]), policies)
        if view is not None:
            _views[key] = view
    return view


def forget_views() -> None:
    """The server dropped its traces (``studio/residency.py``): their views go too."""
    _views.clear()


def is_stored(digest: str, profile: str) -> bool:
    return view_store.exists(KIND, digest, _slot(profile))


def save_view(digest: str, profile: str, view: dict) -> bool:
    return view_store.save(KIND, digest, _slot(profile), view)


class Progress:
    """How far a forked child has got with a trace's first view, in memory shared with it (``count_child.fork``
    makes it before the fork): the stage (``PREPARING``, ``COUNTING`` ``done`` of ``total`` stream messages,
    ``PROBING``, ``REPLAYING`` column ``done`` of ``total`` begun, ``VIEW``) for the page's bar
    (``replay_first.progress``)."""

    PREPARING, COUNTING, PROBING, REPLAYING, VIEW = (replay_first.PREPARING, replay_first.COUNTING,
                                                     replay_first.PROBING, replay_first.REPLAYING, replay_first.VIEW)

    def __init__(self) -> None:
        self._cells = (ctypes.c_int64 * 3).from_buffer(mmap.mmap(-1, 24))     # anonymous, shared with a child

    def set(self, stage: int, done: int = 0, total: int = 0) -> None:
        self._cells[1], self._cells[2], self._cells[0] = done, total, stage

    def get(self) -> tuple[int, int, int]:
        """(stage, done, total); a torn read (the child between two cells) only moves the bar by a step."""
        return self._cells[0], self._cells[1], self._cells[2]


# --- the server's side --------------------------------------------------------

_jobs: dict[tuple[str, str], Worker] = {}
_progress: dict[tuple[str, str], Progress] = {}
_lock = threading.Lock()


def start(digest: str, path: str | None, profile: str, after: int | None = None) -> bool:
    """Compute the Replay page's first view of the file ``path`` (sha256 ``digest``) for ``profile`` in a worker
    process, once per digest and profile in this server; the worker replays once the process ``after`` (the
    trace's token worker, whose per-text counts the replays read) has exited. True when a worker computes it
    (started now or before), False when none does (no file, a redacted view, the view store off, the view stored
    already, no process could be started)."""
    if path is None or view_store.directory() is None or ":" in digest:
        return False
    key = (digest, profile)
    with _lock:
        if key in _jobs:
            return True
        if is_stored(digest, profile):
            return False
        worker = Worker.spawn("studio.replay_worker", [os.path.abspath(path), digest, "--profile", profile,
                               *(["--after", str(after)] if after is not None else [])], "replay process")
        if worker is None:      # no process could be started: the page replays itself
            return False
        _jobs[key] = worker
    return True


def adopt(digest: str, profile: str, worker: Worker, progress: Progress | None = None) -> bool:
    """Take ``worker`` (the trace's forked linting child, which computes this view once it has linted:
    ``count_child.fork``) as the job of this trace and profile, unless one exists, with the ``progress`` it
    reports; True when taken."""
    with _lock:
        if (digest, profile) in _jobs:
            return False
        _jobs[(digest, profile)] = worker
        if progress is not None:
            _progress[(digest, profile)] = progress
    return True


PROGRESS_POLL_S = 0.2
"""How often the Replay page redraws its bar while it waits for a forked child's first view."""


def progress(loaded, profile: str, policies: list[str]) -> tuple[float, str, str] | None:
    """How far the running job of ``loaded`` (a ``services.Loaded``) for ``profile`` has got with the view of
    ``policies``: (share done, English text, Chinese text: ``replay_first.progress``); None when none runs or it
    reports nothing (a worker process)."""
    key = (loaded.digest, profile)
    p = _progress.get(key)
    if p is None or not running(*key):
        return None
    return replay_first.progress(*p.get(), len(loaded.trace.calls), policies)


def running(digest: str, profile: str) -> bool:
    """Whether a worker is computing (or about to compute) this trace's view now."""
    job = _jobs.get((digest, profile))
    return job is not None and job.running()


def wait(digest: str, profile: str, timeout: float | None = None) -> str | None:
    """Until this trace's worker (if any) has exited; its failure as one line, or None (finished or none)."""
    job = _jobs.get((digest, profile))
    if job is None:
        return None
    return job.wait(timeout)


def failure(digest: str, profile: str) -> str | None:
    """Why this trace's worker failed, or None (it did not fail, is still running, or never ran)."""
    job = _jobs.get((digest, profile))
    return None if job is None else job.failure()


def view(digest: str, profile: str, policies: int) -> replay_first.FirstView | None:
    """The worker's view of this trace (a running worker is waited for), else one stored before, else None."""
    mark("replay page waits for the worker")
    wait(digest, profile)
    mark("replay page: worker done")
    return stored_view(digest, profile, policies)


def ahead_view(loaded, specs: list, price_as: str | None, profile: str,
               probe_text: str) -> replay_first.FirstView | None:
    """The view computed ahead for the page's untouched form (``rs.default_specs``, the trace's own price, the
    proposed probes) of ``loaded`` (a ``services.Loaded``), a running worker waited for; None for any other form,
    or when there is none."""
    if not ahead_form(loaded, specs, price_as, probe_text):
        return None
    return view(loaded.digest, profile, len(specs))


def ahead_form(loaded, specs: list, price_as: str | None, probe_text: str) -> bool:
    """Whether the page's form is untouched: the view computed ahead is the one it shows."""
    from studio import replay_services as rs

    return price_as is None and specs == rs.default_specs() and probe_text == "\n".join(rs.proposed_probes(loaded))


# --- the worker's side --------------------------------------------------------

def _trace(path: Path, digest: str):
    """The parse kept on disk by the importer (``agent_core/ingest/snapshot.py``) where present, else the file
    read here (and no parse kept: the server keeps its own)."""
    from agent_core.ingest import snapshot
    from agent_core.ingest.detect import load_any

    trace = snapshot.load(digest)
    mark(f"replay worker snapshot {'loaded' if trace is not None else 'absent'}")
    if trace is None:
        os.environ[snapshot.ENV] = "off"
        trace = load_any(path)
    return trace


def _exited(pid: int) -> bool:
    """Whether the process ``pid`` has ended (gone, or a zombie its parent has not reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rpartition(")")[2].split()[0] in ("Z", "X")
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


SERIES_KIND = "tokens"
"""The view store's kind of the token worker's series (``token_worker.KIND``: not imported, it is not light)."""


def _wait_for_series(pid: int | None, digest: str) -> None:
    """Until the token worker ``pid`` has stored the trace's series (or exited): the Timeline's next long call
    waits for that series, so nothing here takes the CPU from it before (not even this worker's imports)."""
    while pid is not None and not _exited(pid) and not view_store.exists(SERIES_KIND, digest, ""):
        time.sleep(POLL_S)


def _wait_for(pid: int | None, models: list) -> None:
    """Until the process ``pid`` (the trace's token worker) has exited; then take the per-text counts it flushed
    into this process's token stores."""
    if pid is None:
        return
    while not _exited(pid):
        time.sleep(POLL_S)
    take_counts(models)


def take_counts(models: list) -> None:
    """The per-text counts the trace's token worker flushed, read into this process's token stores."""
    from agent_core.trace.tokens import counter_for, token_store

    for name in sorted({counter_for(m).encoding_name for m in models or [None]}):
        store = token_store(name)
        if store is not None:
            store.refresh()


def compute(loaded, profile: str, langs: tuple[str, ...] = LANGS, after: int | None = None,
            ready: Callable[[], None] | None = None, progress: Progress | None = None) -> dict | None:
    """The Replay page's first view of ``loaded`` (a ``services.Loaded``) for ``profile``: its default columns,
    its proposed probes, the trace's own price, the last call; the replays wait for the process ``after``, or
    ``ready()`` when given (what needs no token count is done before). None when the trace has no chat call.
    Each replay and the view are reported to ``progress`` as they begin."""
    from studio import replay_services as rs

    probes = rs.page_probes(loaded)
    rs.recorded_retention(loaded, probes)
    mark("replay worker probes")
    if ready is not None:
        ready()
    else:
        _wait_for(after, rs.trace_models(loaded))
    mark("replay worker after exited")
    specs, results = rs.default_specs(), []
    for i, s in enumerate(specs):
        if progress is not None:
            progress.set(Progress.REPLAYING, i, len(specs))
        results.append(rs.replay_now(loaded, s, profile))
    mark("replay worker replayed")
    if progress is not None:
        progress.set(Progress.VIEW)
    return rs.first_view(loaded, results, probes, langs, None)


class _Loaded(NamedTuple):
    """``services.Loaded``'s fields (that module imports Streamlit: 0.45 s of this worker's CPU)."""

    source: None
    digest: str
    trace: Any


def run(path: Path, digest: str, profile: str, after: int | None = None) -> None:
    """Read ``path``, check it is the trace ``digest`` the server opened, compute and store the page's view."""
    before = path.stat()
    if file_sha256(path) != digest:
        raise SystemExit(f"{path.name} changed since the studio opened it: it was not replayed ahead.")
    trace = _trace(path, digest)
    mark("replay worker trace loaded")
    first = compute(_Loaded(None, digest, trace), profile, after=after)
    mark("replay worker computed")
    after_stat = path.stat()
    if (after_stat.st_size, after_stat.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        raise SystemExit(f"{path.name} changed while it was replayed: nothing was stored.")
    if first is not None and not save_view(digest, profile, first):
        raise SystemExit("the replay view could not be stored (the view store is off or refused it).")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m studio.replay_worker", description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("digest")
    parser.add_argument("--profile", default="openai")
    parser.add_argument("--parent", type=int, default=None, help="exit when this process (the server) is gone")
    parser.add_argument("--after", type=int, default=None, help="replay once this process (the token worker) ended")
    args = parser.parse_args(argv)
    if not attach(args.parent, PARENT_POLL_S, NICE):
        return 3
    mark("replay worker start")
    _wait_for_series(args.after, args.digest)
    mark("replay worker series there")
    # A short-lived process that builds millions of objects holding no reference cycles worth collecting: the
    # cyclic GC's passes over them cost it 0.8-1.3 s of its 6-7 s of CPU at 25,000 calls, for the same peak memory
    # (474 MB either way).
    gc.disable()
    return run_reporting(args.path, lambda: run(args.path, args.digest, args.profile, args.after))


if __name__ == "__main__":
    sys.exit(main())
