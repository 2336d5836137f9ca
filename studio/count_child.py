"""The children a studio server forks from its own parse of a big trace: one lints it, one counts it.

At 25,000 calls the counting worker process (``python -m studio.token_worker``) started an interpreter and parsed
the file again (about 1.8 s of CPU on the machine's other core, beside the first open), and the parse was
pickled for the next process (``agent_core/ingest/snapshot.py``) as soon as it was read (another second). So
right after the server's first parse (``opening.parsed``) it forks:

- a linting child, at the server's priority: it lints the trace with the profile the pages judge it by (the
  trace's own unless the user picked another) and stores the findings in the view store (kind ``findings``,
  where ``services.findings`` reads them), then says so through a pipe (``wait_findings``); meanwhile the server
  counts its first table page. Then, niced, it keeps the parse on disk (``keep_parse``, without the linter's
  cache; the server's own parse leaves that to it: ``load_any(keep=False)``);
- a counting child, niced: it stores what the worker process stores (``token_worker.store_views``: the series,
  its head every ``HEAD_STEP`` calls, the Tokens page's views) and exits (the Tokens page and the replay
  warm-up wait for its exit: kept by it, the parse made them wait 1-4 s longer at 25,000 calls).

They are registered as the trace's job in ``token_worker`` (``_Forked`` answers the few ``Popen`` methods the
server uses), so every page that waits for the worker waits for them the same way. Each child closes the
server's files and sockets, takes its own token locks and caches (another thread of the server may have held
them at the fork), exits when the server does (``worker_process.watch_parent``) and leaves with ``os._exit``.
Only where ``os.fork`` exists; elsewhere the worker process counts as before.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading

from studio import token_worker as tw
from studio import view_store
from studio.token_worker import KIND, NICE, PARENT_POLL_S, _Job, _lock, _token_stores, store_views
from studio.worker_process import Worker, watch_parent


class _Forked:
    """A forked counting child, seen through the few ``subprocess.Popen`` methods the server uses; a daemon
    thread waits for its exit (no zombie is left, whoever asks)."""

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None
        self._exited = threading.Event()
        threading.Thread(target=self._reap, name="count-reaper", daemon=True).start()

    def _reap(self) -> None:
        try:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        except ChildProcessError:       # reaped elsewhere: its outcome is unknown, so a failure
            self.returncode = 1
        self._exited.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        if not self._exited.wait(timeout):
            raise subprocess.TimeoutExpired(f"counting child {self.pid}", timeout)
        return self.returncode

    def terminate(self) -> None:
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


FINDINGS = "findings"
"""The view store's kind for a trace's lint findings (``services._findings`` reads and writes it too)."""


def fork(digest: str, trace, path: str | None, lint_profile: str | None = None, size: int | None = None) -> bool:
    """Count the series of ``trace`` (just parsed by this server from the file of sha256 ``digest``) in a forked
    child: no second interpreter, no second parse (about 1.8 s of CPU at 25,000 calls that the machine's other
    core spent beside the first open). With ``lint_profile`` a second child lints the trace with it at the
    server's priority and stores the findings where ``services.findings`` reads them (``wait_findings``): the
    server meanwhile counts its first table page (linted first by the counting child, the series came 0.8 s later);
    that child then keeps the parse on disk for the next process (a file of ``size`` bytes:
    ``agent_core/ingest/snapshot.py``; ``keep_parse``). The counting child stores what ``run`` stores. Once per
    digest, like ``start``; False when no child counts it (no file, the view store off, stored already, no
    ``os.fork``)."""
    if path is None or view_store.directory() is None or ":" in digest or not hasattr(os, "fork"):
        return False
    with _lock:
        if digest in tw._jobs:
            return True
        if view_store.exists(KIND, digest, ""):
            return False
        if lint_profile is not None and view_store.exists(FINDINGS, digest, lint_profile):
            lint_profile = None
        models = list(trace.models) or [None]
        _token_stores(models)      # the store's key (salt) exists before the child writes to it
        _child_imports()
        linted = threading.Event()
        if not _fork_linter(digest, trace, lint_profile, linted, size):
            lint_profile = None
            linted.set()
        errors = tempfile.TemporaryFile()     # noqa: SIM115 - read and closed when the child has exited
        parent = os.getpid()
        try:
            pid = os.fork()
        except OSError:
            errors.close()
            return False
        if pid == 0:        # the child: never returns
            _child(digest, trace, errors.fileno(), parent)
        tw._jobs[digest] = _Job(Worker(_Forked(pid), errors, "counting child"), models, lint_profile=lint_profile,
                                linted=linted)
    return True


def _fork_linter(digest: str, trace, profile: str | None, linted: threading.Event, size: int | None) -> bool:
    """A child that lints ``trace`` with ``profile`` (when given), stores the findings and says so through a pipe
    (``linted`` is set then, or when it dies), then, niced, keeps the parse on disk (``keep_parse``: here, not in
    the counting child, whose exit the Tokens page and the replay warm-up wait for); False when it could not be
    forked or has nothing to do."""
    keep = KEEP_PARSE and _unkept(digest, size)
    if profile is None and not keep:
        return False
    said, told = os.pipe()      # the child writes a byte once it has linted; its exit closes it too
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError:
        os.close(said)
        os.close(told)
        return False
    if pid == 0:
        code = 1
        try:
            _detach(None, parent, keep=told)
            parsed_meta = set(trace.meta)       # the linter adds its cache there (``_lint_entries``: not kept)
            with contextlib.suppress(Exception):     # a linter error is the server's to meet: it lints itself
                if profile is not None:
                    from studio.viewmodels.findings import findings_for

                    view_store.save(FINDINGS, digest, profile, findings_for(trace, profile))
            os.write(_LINTED_FD, b"1")
            if keep:
                os.nice(NICE)
                for added in set(trace.meta) - parsed_meta:
                    del trace.meta[added]
                keep_parse(digest, trace, size)
            code = 0
        finally:
            os._exit(code)
    os.close(told)
    _Forked(pid)        # reaped when it exits
    threading.Thread(target=_hear_linted, args=(said, linted), name="lint-listener", daemon=True).start()
    return True


def _hear_linted(said: int, linted: threading.Event) -> None:
    try:
        os.read(said, 1)        # a byte: linted; b"": the child exited (or never linted)
    except OSError:
        pass
    finally:
        os.close(said)
        linted.set()


LINT_WAIT_S = 120.0
"""The longest a page waits for the child's findings before it lints the trace itself (a child that hangs)."""


def wait_findings(digest: str, profile: str) -> None:
    """Until this trace's forked child has linted it with ``profile`` (at once when no child lints it with it):
    its findings are then in the view store, unless it failed (then the server lints)."""
    job = tw._jobs.get(digest)
    if job is not None and job.lint_profile == profile and job.linted is not None:
        job.linted.wait(LINT_WAIT_S)


KEEP_PARSE = True
"""Whether a forked child keeps the server's parse on disk after counting (``snapshot.save``)."""


def _child_imports() -> None:
    """What a forked child runs, imported before the fork: an import lock another thread of the server held at
    that moment would never be released in the child."""
    from agent_core.ingest import snapshot  # noqa: F401
    from agent_core.trace import tokens  # noqa: F401
    from studio.viewmodels import findings, responses  # noqa: F401


_LINTED_FD = 3
"""The linting child's end of the pipe that tells the server it has linted."""


def _detach(errors: int | None, parent: int, keep: int | None = None) -> None:
    """In a forked child: stdin and stdout to /dev/null, stderr to ``errors`` (else /dev/null), ``keep`` as fd 3,
    none of the server's other files or sockets; exit when the server is gone; its own token locks and caches
    (another thread of the server may have held them at the fork)."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(null if errors is None else errors, 2)
    if keep is not None:
        os.dup2(keep, _LINTED_FD)
    os.closerange(_LINTED_FD + (keep is not None), os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1024)
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115 - the child's last line, read by the server
    watch_parent(parent, PARENT_POLL_S)
    from agent_core.trace import tokens

    tokens._seed_lock = threading.Lock()
    for cached in (tokens.counter_for, tokens._counter_for_encoding, tokens.token_store):
        cached.cache_clear()


def _child(digest: str, trace, errors: int, parent: int) -> None:
    """The forked counting child: niced, count, store, leave with ``os._exit``."""
    code = 1
    try:
        _detach(errors, parent)
        try:
            os.nice(NICE)
        except OSError:
            pass
        store_views(digest, trace)
        for store in _token_stores(list(trace.models) or [None]):
            store.flush()        # what the server reads in (``take_counts``): no atexit in a forked child
        code = 0
    except BaseException as err:  # noqa: BLE001 - one line for the Tokens page, whatever happened
        with contextlib.suppress(BaseException):      # nowhere left to say it: the exit code says it failed
            print(err if isinstance(err, SystemExit) else f"{type(err).__name__}: {err}", file=sys.stderr, flush=True)
    finally:
        os._exit(code)


def _unkept(digest: str, size: int | None) -> bool:
    """Whether the parse of a file of sha256 ``digest`` (and ``size`` bytes, when known) should be kept on disk
    and is not yet (``agent_core/ingest/snapshot.py``: big files only, while keeping is on)."""
    from agent_core.ingest import snapshot

    if size is not None and size < snapshot.MIN_BYTES:
        return False
    path = snapshot._path(digest)
    return path is not None and not path.exists()


def keep_parse(digest: str, trace, size: int | None = None, detached: bool = False) -> None:
    """Leave ``trace`` on disk as the parse of the file of sha256 ``digest`` unless one is there already (in a
    forked child of its own with ``detached``: ``snapshot.save_detached``)."""
    from agent_core.ingest import snapshot

    if _unkept(digest, size):
        (snapshot.save_detached if detached else snapshot.save)(digest, trace)
