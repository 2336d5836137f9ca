"""The children a studio server forks from its own parse of a big trace: one lints and replays it, one counts it.

At 25,000 calls the counting worker process (``python -m studio.token_worker``) started an interpreter and parsed
the file again (about 1.8 s of CPU on the machine's other core, beside the first open), and the parse was
pickled for the next process (``agent_core/ingest/snapshot.py``) as soon as it was read (another second). So
right after the server's first parse (``opening.parsed``) it forks:

- a linting child, at the server's priority: it lints the trace with the profile the pages judge it by (the
  trace's own unless the user picked another) and stores the findings in the view store (kind ``findings``,
  where ``services.findings`` reads them), then says so through a pipe (``wait_findings``); meanwhile the server
  counts its first table page. Then, niced, it computes the Replay page's first view (``_replay``: what the
  replay worker process computes, with the linter's cache it just built; its replays once the counts are there: it
  counts the stream from its end while the counting child counts the calls from the first, until that child's
  counts reach it, ``_count_back``) and is registered as that view's job (``replay_worker.adopt``); then
  it leaves the parse to a child of its own, at nice 19, to keep on disk (``keep_parse``, without the linter's
  cache; the server's own parse leaves that to it: ``load_any(keep=False)``) and exits;
- a counting child, niced, forked once the server has loaded the vocabularies (``_load_vocabularies``), which
  waits until the linting child has linted (the first page waits for the lint, not for the count): it
  stores what the worker process stores (``token_worker.store_views``: the series, its head every ``HEAD_STEP``
  calls, the Tokens page's views) and exits (the Tokens page waits for its exit: kept by it, the parse made it
  wait 1-4 s longer at 25,000 calls).

Which process does what, and when, shows in the phase log (``CHAIN_STUDIO_PHASES``, ``studio/phases.py``).

They are registered as the trace's job in ``token_worker`` (``_Forked`` answers the few ``Popen`` methods the
server uses), so every page that waits for the worker waits for them the same way. Each child closes the
server's files and sockets, takes its own token locks and caches (another thread of the server may have held
them at the fork), exits when the server does (``worker_process.watch_parent``) and leaves with ``os._exit``.
Only where ``os.fork`` exists; elsewhere the worker process counts as before.
"""
from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import signal
import subprocess
import sys
import tempfile
import threading

from studio import token_worker as tw
from studio import view_store
from studio.phases import mark
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


Covered = ctypes.Array
"""One int64 in memory shared by the two children (``fork``): the calls the counting child has counted and flushed."""

FINDINGS = "findings"
"""The view store's kind for a trace's lint findings (``services._findings`` reads and writes it too)."""


def fork(digest: str, trace, path: str | None, lint_profile: str | None = None, size: int | None = None) -> bool:
    """Count the series of ``trace`` (just parsed by this server from the file of sha256 ``digest``) in a forked
    child: no second interpreter, no second parse (about 1.8 s of CPU at 25,000 calls that the machine's other
    core spent beside the first open). With ``lint_profile`` a second child lints the trace with it at the
    server's priority and stores the findings where ``services.findings`` reads them (``wait_findings``): the
    server meanwhile counts its first table page (linted first by the counting child, the series came 0.8 s later).
    That child then, niced, computes the Replay page's first view of a trace the pages replay ahead
    (``_replay``: what needs no token count while the counting child counts, then the stream counted from its end
    until that child's counts reach it: ``_count_back``; then the replays) and
    keeps the parse on disk for the next process (a file of ``size`` bytes: ``agent_core/ingest/snapshot.py``;
    ``keep_parse``). The counting child stores what ``run`` stores. Once per digest, like ``start``; False when no
    child counts it (no file, the view store off, stored already, no ``os.fork``)."""
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
        replay_profile = _replay_profile(digest, trace)
        counting, counted = os.pipe()      # the linting child reads EOF once the counting child has flushed its counts
        gate, gated = os.pipe()     # and the counting child once the linting child has linted
        covered = (ctypes.c_int64 * 1).from_buffer(mmap.mmap(-1, 8))     # calls counted and flushed (shared)
        wanted = (ctypes.c_int64 * 1).from_buffer(mmap.mmap(-1, 8))      # calls a page waits for (``_Job.wanted``)
        from studio import replay_worker

        progress = replay_worker.Progress()     # the Replay page's bar while the linting child works for it
        linter = _fork_linter(digest, trace, lint_profile, linted, size, replay_profile, counting, gated, covered,
                              progress, wanted)
        if linter is None or lint_profile is None:
            lint_profile = None
            linted.set()
        _load_vocabularies(models)      # after the linting child's fork: its lint needs none
        errors = tempfile.TemporaryFile()     # noqa: SIM115 - read and closed when the child has exited
        parent = os.getpid()
        try:
            pid = os.fork()
        except OSError:
            pid = None
        if pid == 0:        # the child: never returns
            _child(digest, trace, errors.fileno(), parent, counted, gate if linter is not None else None, covered,
                   wanted)
        for fd in (counting, counted, gate, gated):
            os.close(fd)
        if linter is not None and replay_profile is not None:
            job = Worker(linter, linter.errors, "replay process")
            if not replay_worker.adopt(digest, replay_profile, job, progress):
                linter.errors.close()
        if pid is None:
            errors.close()
            return False
        tw._jobs[digest] = _Job(Worker(_Forked(pid), errors, "counting child"), models, lint_profile=lint_profile,
                                linted=linted, wanted=wanted)
    return True


def _load_vocabularies(models: list) -> None:
    """The tiktoken vocabularies of ``models``, loaded in the server before the counting child is forked: the
    server needs them for its first table page at once, and the child inherits them (each process spent about
    0.45 s of CPU loading o200k_base, the child's on the path to the series, the Tokens and Replay pages)."""
    from agent_core.trace.tokens import counter_for, get_encoding

    with contextlib.suppress(Exception):       # a vocabulary that cannot load: the child meets it and says so
        for name in sorted({counter_for(m).encoding_name for m in models}):
            get_encoding(name)
    mark("vocabularies loaded")


REPLAY_CALLS = 2000
"""From this many calls the linting child computes the Replay page's first view (``warmup.WARM_CALLS``: the
pages' warm-up replays ahead from the same size)."""


def _replay_profile(digest: str, trace) -> str | None:
    """The profile the linting child computes the Replay page's first view of ``trace`` with (the trace's own,
    which the pages judge it by until the user picks another), or None: a trace the pages do not replay ahead
    (small, Responses calls: ``warmup.replay_ahead``) or whose view is stored."""
    from agent_core.lint.native import trace_profile
    from studio import replay_worker
    from studio.viewmodels.responses import is_responses_trace

    if len(trace.calls) < REPLAY_CALLS or not trace.calls or is_responses_trace(trace):
        return None
    profile = trace_profile(trace)
    return None if replay_worker.is_stored(digest, profile) else profile


def _fork_linter(digest: str, trace, profile: str | None, linted: threading.Event, size: int | None,
                 replay_profile: str | None = None, counting: int | None = None,
                 gated: int | None = None, covered: Covered | None = None, progress=None,
                 wanted: ctypes.Array | None = None) -> _Forked | None:
    """A child that lints ``trace`` with ``profile`` (when given), stores the findings and says so through a pipe
    (``linted`` is set then, or when it dies); then, niced, computes the Replay page's first view for
    ``replay_profile`` (when given: ``_replay``, its replays once the counts are there: ``_count_back`` with
    ``counting``, ``covered`` and ``wanted``, telling ``progress``: ``replay_worker.Progress``) and keeps the parse
    on disk (``keep_parse``); the child (its ``errors``: the replay's stderr), or None when it could not be forked or
    has nothing to do."""
    keep = KEEP_PARSE and _unkept(digest, size)
    if profile is None and not keep and replay_profile is None:
        return None
    said, told = os.pipe()      # the child writes a byte once it has linted; its exit closes it too
    errors = tempfile.TemporaryFile()     # noqa: SIM115 - read and closed by the replay job, or below
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError:
        os.close(said)
        os.close(told)
        errors.close()
        return None
    if pid == 0:
        code = 1
        try:
            kept = tuple(fd for fd in (told, counting, gated) if fd is not None)
            _detach(errors.fileno(), parent, keep=kept)
            parsed_meta = set(trace.meta)       # the linter adds its cache there (``_lint_entries``: not kept)
            with contextlib.suppress(Exception):     # a linter error is the server's to meet: it lints itself
                if profile is not None:
                    from studio.viewmodels.findings import findings_for

                    view_store.save(FINDINGS, digest, profile, findings_for(trace, profile))
            mark("lint child linted")
            os.write(_LINTED_FD, b"1")
            os.close(_LINTED_FD)
            if gated is not None:
                os.close(_LINTED_FD + len(kept) - 1)      # the counting child's EOF: it counts from here
            with contextlib.suppress(OSError):
                os.nice(NICE)
            if replay_profile is not None:      # the linter's cache is the replays' too
                _replay(digest, trace, replay_profile, _LINTED_FD + 1 if counting is not None else None, covered,
                        progress, wanted)
            code = 0
            if keep:
                with contextlib.suppress(OSError):
                    os.nice(KEEP_NICE - NICE)
                for added in set(trace.meta) - parsed_meta:
                    del trace.meta[added]
                keep_parse(digest, trace, size, detached=True)     # its exit is the Replay page's wait's end
                mark("lint child left the parse to a child")
        except BaseException as err:  # noqa: BLE001 - one line for the Replay page, whatever happened
            if code:
                with contextlib.suppress(BaseException):
                    line = str(err) if isinstance(err, SystemExit) else f"{type(err).__name__}: {err}"
                    os.write(2, (line + "\n").encode("utf-8", "replace"))
        finally:
            os._exit(code)
    os.close(told)
    forked = _Forked(pid)        # reaped when it exits
    forked.errors = errors
    if replay_profile is None:
        errors.close()
    threading.Thread(target=_hear_linted, args=(said, linted), name="lint-listener", daemon=True).start()
    return forked


KEEP_NICE = 19
"""The niceness of the linting child's own child that keeps the parse on disk: for the next process only, never
before a page (the linting child leaves at once: its exit ends the Replay page's wait for its view)."""


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
    import html.entities  # noqa: F401

    from agent_core.ingest import snapshot  # noqa: F401
    from agent_core.lint import windows  # noqa: F401
    from agent_core.trace import tokens  # noqa: F401
    from studio import replay_services, replay_worker  # noqa: F401
    from studio.viewmodels import findings, replay_first, responses  # noqa: F401


_LINTED_FD = 3
"""The linting child's end of the pipe that tells the server it has linted."""


def _detach(errors: int | None, parent: int, keep: int | tuple[int, ...] | None = None) -> None:
    """In a forked child: stdin and stdout to /dev/null, stderr to ``errors`` (else /dev/null), ``keep`` as fd 3
    (a tuple: as fds 3, 4, …), none of the server's other files or sockets; exit when the server is gone; its own
    token locks and caches (another thread of the server may have held them at the fork)."""
    import fcntl

    keep = () if keep is None else (keep,) if isinstance(keep, int) else keep
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 64) for fd in keep]     # out of the way of the targets below
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(null if errors is None else errors, 2)
    for i, fd in enumerate(high):
        os.dup2(fd, _LINTED_FD + i)
    os.closerange(_LINTED_FD + len(keep), os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1024)
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115 - the child's last line, read by the server
    watch_parent(parent, PARENT_POLL_S)
    from agent_core.trace import tokens

    tokens._seed_lock = threading.Lock()
    for cached in (tokens.counter_for, tokens._counter_for_encoding, tokens.token_store):
        cached.cache_clear()


def _child(digest: str, trace, errors: int, parent: int, counted: int | None = None, gate: int | None = None,
           covered: Covered | None = None, wanted: ctypes.Array | None = None) -> None:
    """The forked counting child: niced, count, store, leave with ``os._exit`` (``counted``, the pipe's end the
    linting child waits on, held open until the series is stored and the per-text counts flushed). With ``gate``
    it starts once that pipe reads EOF: the linting child has linted (or exited). On the 2-core machine it had
    counted beside the lint, which the first page waits for: A/B at 25,000 calls, 6 runs each, alternating, the
    cold Timeline 3.85-4.04 s (median 3.9) against 3.59-4.61 s (4.2), the middle call and Tokens page the same
    (0.95 / 2.3 s)."""
    code = 1
    try:
        kept = tuple(fd for fd in (counted, gate) if fd is not None)
        _detach(errors, parent, kept)
        try:
            os.nice(NICE)
        except OSError:
            pass
        if gate is not None:
            with contextlib.suppress(OSError):
                os.read(_LINTED_FD + len(kept) - 1, 1)
            os.close(_LINTED_FD + len(kept) - 1)
        mark("count child start")
        stores = _token_stores(list(trace.models) or [None])
        held = _LINTED_FD if counted is not None else None

        def flushed() -> None:      # the replays need the counts, not the Tokens page's other views
            for store in stores:
                store.flush()
            mark("count child flushed its counts")
            if held is not None:
                os.close(held)        # the linting child's EOF: it replays from here

        def progress(calls: int) -> None:       # what ``_count_back`` in the linting child reads
            if covered is not None:
                covered[0] = calls
        store_views(digest, trace, stored=flushed, counted=progress, wanted=wanted)
        mark("count child stored views")
        for store in stores:
            store.flush()        # what the server reads in (``take_counts``): no atexit in a forked child
        code = 0
    except BaseException as err:  # noqa: BLE001 - one line for the Tokens page, whatever happened
        with contextlib.suppress(BaseException):      # nowhere left to say it: the exit code says it failed
            print(err if isinstance(err, SystemExit) else f"{type(err).__name__}: {err}", file=sys.stderr, flush=True)
    finally:
        os._exit(code)


def _replay(digest: str, trace, profile: str, counting: int | None, covered: Covered | None = None,
            progress=None, wanted: ctypes.Array | None = None) -> None:
    """In the linting child, once it has linted: the Replay page's first view of ``trace`` for ``profile``
    (``replay_worker.compute``, what the replay worker process computes), stored where the page reads it. First it
    counts the stream from its end until the counting child's counts reach it (``_count_back``: measured at 25,000
    calls, the Replay page clicked as soon as the cold Timeline had settled took 5.48 s instead of 6.97 s, medians
    of 7), so the series the Tokens page and the table pages wait for is done sooner; then what needs no token count
    (the proposed probes, the recorded retention and findings, with the linter's cache this child just built; these
    came before the count until round 19), then the replays. No process to start, no parse to load: at 25,000 calls
    the worker process spent about 1.5 s of CPU on those, and linted the recorded trace again."""
    import gc

    from agent_core.core import heap
    from studio import replay_services, replay_worker

    gc.disable()        # like the worker process: no cyclic garbage worth its passes over millions of objects
    heap._lock, heap._depth = threading.Lock(), 0       # another thread of the server may have held them at the fork
    replay_services._DERIVED_LOCK = threading.Lock()
    replay_services._COMPUTING.clear()
    mark("replay stage start")
    mark("replay stage waits for the count")      # and counts the stream from its end meanwhile
    back = 0
    if counting is not None:
        back = _count_back(trace, counting, covered, progress, wanted)
        os.close(counting)
    mark(f"replay stage counted ({back} messages from the end here)")
    loaded = replay_worker._Loaded(None, digest, trace)
    replay_worker.take_counts(replay_services.trace_models(loaded))
    if progress is not None:
        progress.set(progress.PROBING)

    def prepared() -> None:
        replay_services.keep_recorded(loaded, profile)      # for the server's own first replay and view
        replay_services.message_by_id(loaded)
        replay_services.recorded_story_sources(loaded)

    first = replay_worker.compute(loaded, profile, ready=prepared, progress=progress)
    mark("replay stage computed")
    if first is not None and not replay_worker.save_view(digest, profile, first):
        raise SystemExit("the replay view could not be stored (the view store is off or refused it).")


BACK_STEP = 500
"""Messages the linting child counts back between two looks at the counting child's progress."""


def _count_back(trace, counting: int, covered: Covered | None = None, progress=None,
                wanted: ctypes.Array | None = None) -> int:
    """In the linting child, instead of waiting idle for the counting child's per-text counts: count the stream from
    its last message back, a ``BACK_STEP`` at a time, while that child counts the calls from the first; stop once
    the calls it has counted and flushed to the token store (``covered[0]``, shared memory it sets every
    ``HEAD_CHECK`` calls: ``token_worker.store_views``) reach the messages counted here, or when ``counting`` reads
    EOF (it has flushed every count). The counts made here go to the token store too, where the counting child finds the
    stream's end when it reads the store in (``token_worker._sync_counts``). A count is a pure function of the text,
    so who counts a message changes no figure; a message neither process reached (in no call's payload) is counted
    by the replay that needs it. Without ``covered`` or a token store, it waits for EOF as before. How many messages
    were counted here; ``progress`` (``replay_worker.Progress``) is told the messages counted by either child.

    While a page waits for calls the counting child has not reached (``wanted[0]``: ``token_worker.wait_head``),
    it counts back from the last message those calls hold instead, until the counting child's counts reach that
    stretch: a table page at call 12,500 of 25,000 waits for the first half of the stream, which the two children
    counting from both ends reach last."""
    from agent_core.replay.calls import call_position, trace_model
    from agent_core.trace.tokens import token_store
    from agent_core.trim.message_tokens import MessageTokens

    mt = MessageTokens(trace_model(trace))
    store = token_store(mt.counter.encoding_name)
    stream = trace.stream
    k = n = len(stream)
    if covered is None or store is None:
        with contextlib.suppress(OSError):
            while os.read(counting, 1):
                pass
        return 0
    reach, furthest = [], 0       # per call in call order: the stream messages all calls up to it were made after
    for c in trace.calls:
        furthest = max(furthest, call_position(c, n))
        reach.append(furthest)
    os.set_blocking(counting, False)
    here = mid = top = 0        # [mid, top): the stretch counted back for a waiting page
    with contextlib.suppress(OSError):
        while k > 0:
            try:
                if os.read(counting, 1) == b"":
                    break       # the counting child has flushed every count
            except BlockingIOError:
                pass
            done = min(covered[0], len(reach))
            front = reach[done - 1] if done else 0      # its counts cover the stream up to here
            if progress is not None:
                progress.set(progress.COUNTING, min(n, front + n - k + max(0, top - max(mid, front))), n)
            if front >= k:
                break           # ... up to the messages counted here
            page = min(wanted[0], len(reach)) if wanted is not None else 0
            if page and top < reach[page - 1] < k and reach[page - 1] > front:
                mid = top = reach[page - 1]     # a page waits for calls it has not reached
            high = mid if mid > front else k
            low = max(front if high == mid else 0, high - BACK_STEP)
            for j in range(high - 1, low - 1, -1):
                mt.stream_tokens(stream[j])
            here += high - low
            if high == mid:
                mid = low
            else:
                k = mid if mid <= low <= top else low      # over the waiting page's stretch, counted
            store.flush()
    store.refresh()
    return here


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
