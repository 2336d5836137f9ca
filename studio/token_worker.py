"""A big trace's whole token series, counted in a separate process and kept on disk whole.

Counting the token series of a 25,000-call trace costs about 3 s of CPU with an empty token store (tiktoken on
50,001 distinct messages, 121k store look-ups). Counted on a thread of the server (round 5), its Python part held
the GIL and slowed the first open, the next call and the Tokens page. So at a big trace's first open the server
starts ``python -m studio.token_worker`` (``start``): a process of its own (the machine's other core) that reads
the same file, counts it with the same code and stores the finished series in the view store
(``studio/view_store.py``, kind ``tokens``, by trace digest and code digest), then the Tokens page's heaviest
messages and sampled-text count (kind ``tokens-page``: another 1.5 s of CPU the server's warm-up spent). The server
only reads them back (``stored``, ``page_view``): one file instead of 121k look-ups, so a reopen or a second server
has it in milliseconds; a page that needs the series takes it as soon as its file is there (``wait_series``), and
the per-text counts the worker added to the token store are read into the server's before it replays
(``take_counts``).

- Started once per trace digest and server, right after the server's first parse of a file of a trace of
  ``opening.BIG_CALLS`` calls: a child forked from the server (``studio/count_child.py``) counts the trace the
  server parsed (no second interpreter, no second parse: at 25,000 calls the worker process's start and parse
  were 1.8 s of CPU beside the first open), then keeps that parse on disk for the next process; where there is
  no ``os.fork``, the worker process (``start``) at the first open. Not when the series is stored already, when
  the view store is off (nowhere to hand it back: the server counts on a thread as before) or for bytes held in
  the session.
- The worker checks that the file still has the digest it was started for (it hashes the bytes before reading
  and re-checks size and mtime after); a file that changed is an error, nothing is stored.
- It exits when the server does: it watches its parent's pid (``worker_process.watch_parent``), and the server terminates
  its workers at exit.
- A failure (non-zero exit, nothing stored) is kept with its last stderr line (``failure``); the Tokens page
  shows it and counts the series in the page instead. A stored series that is damaged, has another number of
  calls or does not read back as a series is recomputed, never trusted.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent_core.core.caches import file_sha256
from studio import view_store
from studio.viewmodels import tokens as _tokens
from studio.worker_process import Worker, attach, run_reporting

KIND = "tokens"
"""The view store's kind for a whole token series (profile-independent: stored with profile ``""``)."""
NICE = 19
"""The niceness of the worker, and of a forked trace's counting child and linting child's replays
(``count_child.py``): the server's page runs and the browser come first when both cores are busy. At 19 rather
than 5 (five alternating flows at 25,000 calls, medians): the cold open 3.51 s against 3.75 s, the middle call
0.77 s against 0.94 s, the Tokens page 1.75 s against 1.82 s, the Replay page 0.82 s against 0.78 s."""
PARENT_POLL_S = 0.5
"""How often the worker checks that the server that started it is alive."""
_FIELDS = ("call", "by_role", "estimated", "reported", "completion", "context_window")


# --- the series as JSON -------------------------------------------------------

def rows_of(series: list[_tokens.CallTokens]) -> list[list]:
    """The series as JSON-ready rows (one list per call, ``_FIELDS`` order)."""
    return [[t.call, t.by_role, t.estimated, t.reported, t.completion, t.context_window] for t in series]


def series_of(rows: object, calls: int) -> list[_tokens.CallTokens] | None:
    """The series back from ``rows``; None unless it is exactly one well-formed row per call, in order."""
    if not isinstance(rows, list) or len(rows) != calls:
        return None
    out = []
    for i, row in enumerate(rows):
        if not (isinstance(row, list) and len(row) == len(_FIELDS) and row[0] == i and isinstance(row[1], dict)
                and all(isinstance(v, int) for v in row[1].values()) and isinstance(row[2], int)
                and isinstance(row[5], int) and all(v is None or isinstance(v, int) for v in row[3:5])):
            return None
        out.append(_tokens.CallTokens(*row))
    return out


def stored(digest: str, calls: int) -> list[_tokens.CallTokens] | None:
    """The series stored for this trace digest (and this code), or None (absent, off, damaged: recompute)."""
    return series_of(view_store.load(KIND, digest, ""), calls)


def is_stored(digest: str) -> bool:
    """Whether a series file of this trace (and code) is on disk: reading it back takes about 0.1 s at 25,000 calls."""
    return view_store.exists(KIND, digest, "")


LARGEST = 10
"""The heaviest messages the worker finds for the Tokens page (its table's length)."""
PAGE_KIND = "tokens-page"
"""The view store's kind for the Tokens page's other first-visit views (heaviest messages, sampled texts)."""


def page_views(trace) -> dict:
    """The Tokens page's views that read every message again (seconds at 25,000 calls): computed by the worker."""
    return {"largest": [[b.role, b.tokens, b.preview, b.first_call, b.index, b.calls]
                        for b in _tokens.largest_messages(trace, LARGEST)],
            "sampled": _tokens.sampled_texts(trace)}


def _page_view_of(stored_views: object, name: str):
    if not isinstance(stored_views, dict):
        return None
    value = stored_views.get(name)
    if name == "sampled":
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if not isinstance(value, list) or not all(
            isinstance(r, list) and len(r) == 6 and isinstance(r[0], str) and isinstance(r[2], str)
            and all(isinstance(v, int) for v in (r[1], *r[3:])) for r in value):
        return None
    return [_tokens.BigMessage(*r) for r in value]


def page_view(digest: str, trace, name: str, limit: int, compute):
    """The Tokens page's view ``name`` (``largest`` with ``limit``, or ``sampled``): the worker's when it stored it
    for this trace (and code; a worker still running is waited for), else ``compute(trace[, limit])`` here. The
    sampled-text count of a worker still running is computed here (0.25 s at 25,000 calls) rather than waited for:
    the worker stores it after the heaviest messages, about a second after the series the Traces page waits for."""
    if name == "sampled" and running(digest) and not view_store.exists(PAGE_KIND, digest, ""):
        return compute(trace)
    wait(digest)
    if (name != "largest" or limit == LARGEST) and view_store.exists(PAGE_KIND, digest, ""):
        found = _page_view_of(view_store.load(PAGE_KIND, digest, ""), name)
        if found is not None:
            return found
    return compute(trace, limit) if name == "largest" else compute(trace)


def store(digest: str, series: list[_tokens.CallTokens]) -> bool:
    """Keep ``series`` for this trace digest; False when the view store is off or refused it."""
    return view_store.save(KIND, digest, "", rows_of(series))


def count(trace, progress=None) -> list[_tokens.CallTokens]:
    """The series every page reads: by role per call, Responses calls on their effective input (``progress``:
    called with the series so far every ``HEAD_CHECK`` calls, before that adjustment)."""
    from studio.viewmodels.responses import responses_token_series

    series = _tokens.token_series(trace) if progress is None else _tokens.token_series(trace, HEAD_CHECK, progress)
    return responses_token_series(trace, series)


HEAD_KIND = "tokens-head"
"""The view store's kind for the estimates of the calls counted so far (a list of ints from call 0), stored by a
counting child every ``HEAD_STEP`` calls, and as soon as it has counted the calls a page waits for (``wait_head``):
a table page in the middle of a 25,000-call trace reads its estimates from there once the count has passed it,
instead of waiting for the whole series."""
HEAD_STEP = 2500
HEAD_CHECK = 100
"""How often (in calls counted) the counting child looks whether a page waits for calls it has now counted (at
call 12,500 of 25,000 a head every ``HEAD_STEP`` calls came 2,500 calls, 5,000 messages, after the page's), and
shares its counts with a linting child counting the stream from its end (``_sync_counts``)."""


def _sync_counts(models: list) -> None:
    """Flush this process's per-text counts to the token stores of the vocabularies of ``models``, then read in what
    other processes appended meanwhile (a forked linting child counts the stream from its end:
    ``count_child._count_back``), so the rest of this count finds it instead of encoding it again."""
    stores = _token_stores(models)
    for store in stores:
        store.flush()
    for store in stores:
        store.refresh()


def head(digest: str, calls: list[int]) -> dict[int, int] | None:
    """Call index -> estimate for ``calls`` from the stored head of the series, None when it does not reach them
    (or is absent, or damaged). Only for calls a Responses chain does not adjust (``needs_whole_series``)."""
    found = view_store.load(HEAD_KIND, digest, "")
    if not isinstance(found, list) or not calls or max(calls) >= len(found) or min(calls) < 0:
        return None
    values = [found[c] for c in calls]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return None
    return dict(zip(calls, values))


def wait_head(digest: str, calls: list[int]) -> dict[int, int] | None:
    """Until this trace's counting child has counted past ``calls`` (their estimates), or has stored the whole
    series or exited (None: read the series). A forked child is told to store its head once it has (``_Job.wanted``)."""
    job = _jobs.get(digest)
    if job is not None and job.wanted is not None and calls:
        job.wanted[0] = max(job.wanted[0], max(calls) + 1)
    while job is not None and job.proc.poll() is None and not is_stored(digest):
        found = head(digest, calls)
        if found is not None:
            return found
        time.sleep(SERIES_POLL_S)
    return None


def series(digest: str, trace, keep: bool) -> list[_tokens.CallTokens]:
    """The series of ``trace``: its worker's (waited for), or the one stored, else counted here; with ``keep``
    (a big trace) a series counted here is stored for the next server."""
    keep = keep or digest in _jobs      # a child or worker counted it (whatever the trace's size): take its series
    wait_series(digest)
    take_counts(digest, block=False)
    found = stored(digest, len(trace.calls)) if keep else None
    if found is None:
        found = count(trace)
        if keep and ":" not in digest:
            store(digest, found)
    return found


def done(digest: str) -> bool:
    """Whether this trace's worker has stored its series (a page may read it instead of counting): the worker
    stores it first, then the Tokens page's other views, then exits."""
    job = _jobs.get(digest)
    return job is not None and (job.proc.poll() == 0 or job.proc.returncode is None and is_stored(digest))


SERIES_POLL_S = 0.05
"""How often a page waiting for the series looks for its file (the worker writes it whole: ``os.replace``)."""


def wait_series(digest: str) -> None:
    """Until this trace's worker has stored its series or exited (at once when there is no worker)."""
    job = _jobs.get(digest)
    while job is not None and job.proc.poll() is None and not is_stored(digest):
        time.sleep(SERIES_POLL_S)


# --- the server's side --------------------------------------------------------

@dataclass
class _Job:
    worker: Worker
    models: list[str | None]
    """The trace's models (their vocabularies' token stores receive the worker's per-text counts)."""
    taken: bool = False
    """Whether the worker's per-text counts were read into this server's token stores (``take_counts``)."""
    lint_profile: str | None = None
    """The profile a forked child lints the trace with (``count_child.fork``), or None."""
    linted: threading.Event | None = None
    """Set once that child has linted (its findings stored or not) or exited."""
    wanted: ctypes.Array | None = None
    """A forked counting child's: one int64 in shared memory, the calls a page waits for (``wait_head``)."""

    @property
    def proc(self) -> subprocess.Popen:
        return self.worker.proc


_jobs: dict[str, _Job] = {}
_lock = threading.Lock()


def start(digest: str, path: str | None, models: list[str] | None = None) -> bool:
    """Count the series of the file ``path`` (sha256 ``digest``, calls to ``models`` when known: before the parse
    they are not) in a worker process, once per digest in this server; True when a worker counts it (started now
    or before), False when none does (no file, the view store off, the series stored already)."""
    if path is None or view_store.directory() is None or ":" in digest:
        return False
    with _lock:
        if digest in _jobs:
            if models is not None:
                _jobs[digest].models = list(models)
            return True
        if view_store.exists(KIND, digest, ""):     # a reopen: the series is on disk already (``series`` checks it)
            return False
        _token_stores(models or [None])     # this server's token store first: the worker shares its key (salt)
        worker = Worker.spawn("studio.token_worker", [os.path.abspath(path), digest], "counting process")
        if worker is None:      # no process could be started: the server counts on a thread as before
            return False
        _jobs[digest] = _Job(worker, list(models or [None]))
    return True


def pid(digest: str) -> int | None:
    """The pid of this trace's worker while it runs, else None."""
    job = _jobs.get(digest)
    return job.proc.pid if job is not None and job.worker.running() else None


def running(digest: str) -> bool:
    """Whether a worker is counting this trace now."""
    job = _jobs.get(digest)
    return job is not None and job.proc.poll() is None


def wait(digest: str, timeout: float | None = None) -> str | None:
    """Until this trace's worker (if any) has exited; its failure as one line, or None (finished or none)."""
    job = _jobs.get(digest)
    if job is None:
        return None
    return job.worker.wait(timeout)


def failure(digest: str) -> str | None:
    """Why this trace's worker failed, or None (it did not fail, or is still counting, or never ran)."""
    job = _jobs.get(digest)
    return None if job is None else job.worker.failure()


def _token_stores(models: list[str | None]) -> list:
    """This server's on-disk token stores (``agent_core/trace/token_store.py``) of the vocabularies of ``models``."""
    from agent_core.trace.tokens import counter_for, token_store

    names = {counter_for(m).encoding_name for m in models}
    return [s for s in (token_store(n) for n in sorted(names)) if s is not None]


def take_counts(digest: str, block: bool = True) -> None:
    """Once this trace's worker has exited (waited for, unless not ``block``): read the per-text counts it added to
    the token stores (flushed at its exit) into this server's, loaded before the worker wrote them; once, so the
    server's own counting (a replay's token budget) finds them instead of encoding 50,001 messages again."""
    job = _jobs.get(digest)
    if job is None or (not block and job.proc.poll() is None):
        return
    if wait(digest) is not None or job.proc.returncode != 0:
        return
    with _lock:
        if job.taken:
            return
        job.taken = True
        for store in _token_stores(job.models):
            store.refresh()     # merges what the worker appended


# --- the worker's side --------------------------------------------------------

def _kept_trace(digest: str):
    """The parse of the file of sha256 ``digest`` kept on disk by an earlier process (``agent_core/ingest/snapshot.py``,
    where present), else None; then this worker's own parse is not kept (the server that started it keeps its own:
    pickled twice, it cost the machine a second of CPU more)."""
    try:
        from agent_core.ingest import snapshot
    except ImportError:
        return None
    trace = snapshot.load(digest)
    if trace is None:
        os.environ[snapshot.ENV] = "off"
    return trace


def run(path: Path, digest: str) -> None:
    """Read ``path``, check it is the trace ``digest`` the server opened, count it and store the series."""
    from agent_core.ingest.detect import load_any

    before = path.stat()
    if file_sha256(path) != digest:
        raise SystemExit(f"{path.name} changed since the studio opened it: its tokens were not counted.")
    trace = _kept_trace(digest)
    if trace is None:
        trace = load_any(path)
    series = count(trace)
    after = path.stat()
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        raise SystemExit(f"{path.name} changed while its tokens were counted: nothing was stored.")
    store_views(digest, trace, series)


def store_views(digest: str, trace, series: list[_tokens.CallTokens] | None = None,
                stored: Callable[[], None] | None = None, counted: Callable[[int], None] | None = None,
                wanted: ctypes.Array | None = None) -> None:
    """Count ``trace`` (unless ``series`` is given) and store its series, then (after ``stored()``, when given) the
    Tokens page's other views. ``counted``: told how many calls are counted, their per-text counts flushed to the
    token store, every ``HEAD_CHECK`` calls (else every ``HEAD_STEP``). The head of the series is stored every
    ``HEAD_STEP`` calls, and once the calls a page waits for (``wanted[0]``, set by the server: ``_Job.wanted``)
    are counted."""
    if series is None:
        models = list(trace.models) or [None]
        last = [0]      # the calls counted at the last head stored

        def head(so_far: list[_tokens.CallTokens]) -> None:
            n = len(so_far)
            due = n - last[0] >= HEAD_STEP or wanted is not None and last[0] < wanted[0] <= n
            if counted is not None or due:
                _sync_counts(models)
                if counted is not None:
                    counted(n)
            if due:
                last[0] = n
                view_store.save(HEAD_KIND, digest, "", [t.estimated for t in so_far])
        series = count(trace, head)
    else:       # every estimate, before the series: a table page reads its rows' from there (``head``)
        view_store.save(HEAD_KIND, digest, "", [t.estimated for t in series])
    from studio.phases import mark

    mark("series counted")
    if not store(digest, series):     # first: the pages waiting for it read it now (``wait_series``)
        raise SystemExit("the token series could not be stored (the view store is off or refused it).")
    if stored is not None:
        stored()
    if not view_store.save(PAGE_KIND, digest, "", page_views(trace)):
        raise SystemExit("the Tokens page's heaviest messages could not be stored (the view store refused them).")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m studio.token_worker", description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("digest")
    parser.add_argument("--parent", type=int, default=None, help="exit when this process (the server) is gone")
    args = parser.parse_args(argv)
    if not attach(args.parent, PARENT_POLL_S, NICE):
        return 3
    return run_reporting(args.path, lambda: run(args.path, args.digest))


if __name__ == "__main__":
    sys.exit(main())
