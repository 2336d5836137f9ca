"""What the other pages of a big open trace will ask for, computed in the background after its first open.

The first open of a 25,000-call trace builds what every page reads (lint, token counts, the call table:
``studio/opening.py``). Two pages need more on their first visit: the Tokens page its heaviest messages, its
sampled-text count and its bins (about a second at 25,000 calls), and the Replay page two whole replays under its
default policies (the walk, then the linter on 25,000 rebuilt payloads: seconds each), with the retention matrices
and the "why did it forget?" stories derived from them. So, when a page of a trace of ``WARM_CALLS`` calls or more
has finished (``studio/router.py``), after the first open's own steps, one background thread builds those: the
Tokens page's views first, then the Replay page's form and what the Timeline's first search reads, then the Replay
page's default columns (``replay_services.default_specs``: same policies, same parameters, the trace's own price,
the open provider profile) and what the page derives from them with the proposed probes. The pages take them from
the same caches they would fill themselves (``services``' cached functions, ``replay_services._KEPT`` and
``_derived``); whatever a page asks for that is still being computed it waits for, with its progress bar, rather
than computing it twice. Anything else (other policies, parameters, prices, probes) is computed on demand as before.

The Replay page's part runs in a process of its own when it can (``replay_ahead``, ``studio/replay_worker.py``):
started as soon as the first open is done, it replays once the trace's token worker has exited and stores the
page's first view in the view store. On this thread the replays held the GIL while the pages ran (at 25,000 calls
in Chromium, the Replay page visited at once 3.6 s and the Timeline's next call 1.6 s, against 0.9 s each at 100
calls). This thread still replays for bytes in the session, a redacted view and a server without the view store.

The thread keeps the server's CPU priority: a thread that the OS deschedules while it holds the GIL would
stall the page's own thread as well. It runs with a short thread switch interval (``SWITCH_S``).

Nothing here renders; a failure in the background is left for the page to meet (and report) itself.
"""
from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial

from studio import count_child, lineage_services, opening, replay_worker, residency, services, token_worker
from studio import replay_services as rs
from studio.phases import mark
from studio.services import Loaded

WARM_CALLS = count_child.REPLAY_CALLS
"""From this many calls an open trace's Replay page is computed ahead (below it the page takes well under a second)."""
IDLE_S = 3.0
"""Seconds with no page run before a warm-up starts (every page run re-arms it). Started at once, it shared the
interpreter with the delivery of the first open itself: a 25,000-call Timeline reopened in 13.4-13.9 s with it,
6.8-8.8 s without (Chromium, two runs each). A warm-up already under way is not stopped by a page run."""
_started: set[tuple[str, str, str]] = set()
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_last: Future | None = None
_timer: threading.Timer | None = None


residency.on_evict(replay_worker.forget_views)


@residency.on_evict
def _forget_started() -> None:
    """The dropped traces are warmed up again when a page opens them (``studio/residency.py``)."""
    with _lock:
        _started.clear()


def _first_time(key: tuple) -> bool:
    """True the first time ``key`` (trace digest, profile, what) is asked for, until the traces are dropped."""
    with _lock:
        if key in _started:
            return False
        _started.add(key)
        return True


def page_started() -> None:
    """A page run began: a warm-up that has not started waits for the next quiet moment."""
    global _timer
    with _lock:
        if _timer is not None:
            _timer.cancel()
            _timer = None


_pages = 0
"""Page runs under way (``page_run``)."""
_last_run_end = 0.0
"""``time.monotonic()`` when the last page run ended."""


@contextmanager
def page_run() -> Iterator[None]:
    """Around a page run (``router.main``): ``page_started``, and counted, so the short jobs of the counting
    thread wait for the page to be drawn (``_between_pages``)."""
    global _pages, _last_run_end
    page_started()
    with _lock:
        _pages += 1
    try:
        yield
    finally:
        with _lock:
            _pages -= 1
            _last_run_end = time.monotonic()


BETWEEN_PAGES_S = 0.02
"""How often a job that waits for the page runs to end looks again."""
DRAWN_S = 1.0
"""How long after a page run ends the browser is taken to draw it (a cold 25,000-call Timeline: about 1 s)."""


def _between_pages() -> None:
    """Until no page run is under way and the last one ended ``DRAWN_S`` ago: a job of a fraction of a second that
    holds the GIL and a core (the stream's messages, the search index, the token series read in) waits for the
    page to be drawn instead of slowing it. At 25,000 calls the series, stored by the counting child about when
    the benchmark steps to the middle call, was read in during that step in one flow of five (1.12-1.14 s
    against 0.72-0.94 s); started as soon as the cold Timeline's run ended, the stream and the search index made
    its median 3.87 s against 3.67 s."""
    while _pages or time.monotonic() - _last_run_end < DRAWN_S:
        time.sleep(BETWEEN_PAGES_S)


def when_quiet(loaded: Loaded, profile: str, lang: str = "en") -> None:
    """The stream's messages and the search index built, and the token series read in once it is stored
    (``stream_ahead``, ``series_ahead``: on the counting thread, in that order), the Replay page's first view in
    a worker process at once (``replay_ahead``), and ``warm_up`` once no page has run for ``IDLE_S`` seconds, in
    this run's script context (and ``warm_columns``)."""
    global _timer
    stream_ahead(loaded)
    series_ahead(loaded)
    replay_ahead(loaded, profile)
    first_view_ahead(loaded, profile)
    ctx = _script_context()
    epoch = residency.epoch()

    def fire() -> None:
        if ctx is not None:
            from streamlit.runtime.scriptrunner import add_script_run_ctx

            add_script_run_ctx(threading.current_thread(), ctx)
        with residency.in_use():
            if residency.epoch() != epoch:      # the server dropped this trace since: the next page run re-arms
                return
            mark("warm_up fires")
            warm_up(loaded, profile, lang, ctx=ctx)
            warm_columns(loaded, profile, ctx)

    with _lock:
        if _timer is not None:
            _timer.cancel()
        _timer = threading.Timer(IDLE_S, fire)
        _timer.daemon = True
        _timer.start()


SWITCH_S = 0.0005
"""The interpreter's thread switch interval while a warm-up runs (Python's default is 0.005 s). The warm-up holds
the GIL for seconds; each time the page's script or the server's event loop wants it they wait up to this long,
and a page step hands it over many times (each message sent to the browser)."""
_busy = 0


@contextmanager
def _short_switches() -> Iterator[None]:
    global _busy
    with _lock:
        if _busy == 0:
            _short_switches.saved = sys.getswitchinterval()     # type: ignore[attr-defined]
            sys.setswitchinterval(SWITCH_S)
        _busy += 1
    try:
        yield
    finally:
        with _lock:
            _busy -= 1
            if _busy == 0:
                sys.setswitchinterval(_short_switches.saved)   # type: ignore[attr-defined]


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="replay-warmup")
    return _pool


def warm_up(loaded: Loaded, profile: str, lang: str = "en", min_calls: int | None = None,
            ctx=None) -> Future | None:  # noqa: ANN001 - Streamlit's ScriptRunContext
    """Replay ``loaded`` under the Replay page's default columns and derive its views, in the background, once
    per trace, profile and language; the future of the last step, or None when nothing was started (a small or
    Responses trace, or started already)."""
    if not _worth_it(loaded, profile, min_calls):
        return None
    if not _first_time((loaded.digest, profile, lang)):
        return None
    if rs.responses_replay(loaded, 1) is not None:      # replayed by item groups, not by these policies
        return None
    pool = _executor()
    submit = _submitter(pool, ctx or _script_context())
    # first the worker's counts (waited for): the replays below count tokens too
    submit(token_worker.take_counts, loaded.digest)
    submit(_tokens_page, loaded)
    submit(_replay_form, loaded)
    submit(_timeline_search, loaded)
    if replay_worker.running(loaded.digest, profile) or replay_worker.is_stored(loaded.digest, profile):
        return None         # the Replay page's first view is (being) computed in a process of its own
    replays = [rs.replay_ahead(loaded, s, profile, submit) for s in rs.default_specs()]
    if any(f is None for f in replays):     # the page replayed one already: it derives its views itself
        return None
    global _last
    _last = submit(_derive, loaded, replays, lang)
    return _last


_shown_ahead: set[tuple[str, str]] = set()
"""(digest, profile) of the traces whose Replay page last showed the first view another process computed."""


def shown_ahead(digest: str, profile: str, shown: bool) -> None:
    """The Replay page says whether it showed the view computed ahead (``replay_worker``) for its untouched form."""
    with _lock:
        (_shown_ahead.add if shown else _shown_ahead.discard)((digest, profile))


def warm_columns(loaded: Loaded, profile: str, ctx=None) -> None:  # noqa: ANN001 - Streamlit's ScriptRunContext
    """The Replay page's default columns replayed on the warm-up thread, once per trace and profile, when the page
    last showed the first view another process computed (``shown_ahead``): another call of the page, an expander or
    a re-send reads the replays themselves, and at 25,000 calls the first such step replayed both columns (2.8 s in
    Chromium). The page takes them as it takes ``warm_up``'s, waiting for one under way. Not after the form was
    changed: replays of columns no longer shown would only be held."""
    if (loaded.digest, profile) not in _shown_ahead or not _worth_it(loaded, profile):
        return
    if not _first_time((loaded.digest, profile, "columns")):
        return
    submit = _submitter(_executor(), ctx or _script_context())
    submit(token_worker.take_counts, loaded.digest)
    for s in rs.default_specs():
        rs.replay_ahead(loaded, s, profile, submit)


def _worth_it(loaded: Loaded, profile: str, min_calls: int | None = None) -> bool:
    """A trace big enough to compute its pages ahead, once the first open's own steps are done."""
    n = len(loaded.trace.calls)
    if n < (WARM_CALLS if min_calls is None else min_calls):
        return False
    # not before the first open's own lint, count and table (the Traces page: not yet)
    return n < opening.BIG_CALLS or opening.prepared(loaded.digest, profile)


def replay_ahead(loaded: Loaded, profile: str, min_calls: int | None = None) -> bool:
    """Start the Replay page's first view of a big file-backed trace in a worker process (``studio/replay_worker.py``:
    it replays once the trace's token worker has exited, its counts are the replays'), unless the trace's forked
    linting child computes it already (``count_child``: adopted as the job); True when one computes it.
    Not for a Responses trace (replayed by item groups), bytes in the session, a redacted view or the view store
    off: then ``warm_up`` replays on a thread."""
    if not _worth_it(loaded, profile, min_calls) or rs.responses_replay(loaded, 1) is not None:
        return False
    after = token_worker.pid(loaded.digest)      # the replay worker waits for it
    mark(f"replay_ahead after={after}")
    return replay_worker.start(loaded.digest, getattr(loaded.source, "path", None), profile, after)


def _script_context():     # Streamlit's ScriptRunContext, or None outside a script run
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    return get_script_run_ctx(suppress_warning=True)


def _submitter(pool: ThreadPoolExecutor, ctx) -> Callable[..., Future]:
    """``pool.submit``, each job run with short thread switches and in the script run context ``ctx`` of the run
    that started it (so Streamlit's cached functions called from the job know their app, with no warning)."""
    def submit(fn: Callable, *args) -> Future:
        def job():
            if ctx is not None:
                from streamlit.runtime.scriptrunner import add_script_run_ctx

                add_script_run_ctx(threading.current_thread(), ctx)
            with _short_switches():
                return fn(*args)
        residency.hold()        # queued or running, the job holds its trace: no eviction until it is done
        try:
            future = pool.submit(job)
        except BaseException:
            residency.release()
            raise
        future.add_done_callback(lambda _: residency.release())     # run, failed or cancelled
        return future
    return submit


def count_ahead(loaded: Loaded) -> Future | None:
    """At the start of a big trace's first open: its token series, in the background, once per trace (the
    Timeline counts only the rows it shows: ``estimate_services``). A file is counted by a worker process
    (``studio/token_worker.py``: None is returned); bytes in the session, a redacted view, a series already
    stored, or a server with the view store off, on a thread as follows. The counting runs mostly outside the GIL
    (tiktoken's encoder, the token store's hashing), beside the page's own lint and table. The Tokens page's
    other views are left to the warm-up (``when_quiet``): computed at once too, in Python under the GIL, they
    took the CPU from the first open's delivery and from the next pages' runs (at 25,000 calls in Chromium,
    Tokens 5.7-11 s and Replay 8.5-14 s at once, against 4.0-7.2 s and 1.5-7.3 s with the count in the page).
    It runs in a thread of its own: the replay warm-up, queued behind it, started seconds later than with the
    count in the page (Replay at once 10.8-12.2 s against 2.6-3.2 s). The future, or None when small or
    started already."""
    if len(loaded.trace.calls) < opening.BIG_CALLS or opening.counted(loaded.digest):
        return None
    if not _first_time((loaded.digest, "", "count")):
        return None
    if token_worker.is_stored(loaded.digest) and services.token_series(loaded):   # a reopen: read at once, whole
        return None
    models = services._models_of(loaded.digest, loaded.trace)
    if token_worker.start(loaded.digest, getattr(loaded.source, "path", None), models):
        return None         # counted in a process of its own: no GIL shared
    return _counting(partial(services.token_series, loaded))


def stream_ahead(loaded: Loaded) -> Future | None:
    """After a page run of a big trace whose stream is still rows: its messages built in the background, once
    (0.15 s at 25,000 calls on a quiet server, twice that beside the first open's background work), so the first
    page that reads them (Lineage, a replay) does not; then what the Timeline's first search reads (0.2 s; the
    first query took 0.39 s at 25,000 calls when it built it, 0.25 s at 100), then the Lineage page's turns,
    Responses chain and calls carrying the message it picks first (0.25 s). The future, or None."""
    trace = loaded.trace
    if len(trace.calls) < opening.BIG_CALLS or not trace.stream_deferred:
        return None
    if not _first_time((loaded.digest, "", "stream")):
        return None

    def build() -> None:
        _between_pages()
        _ = trace.stream        # built on its first read (``Trace.defer_stream``)
        mark("stream built ahead")
        _between_pages()
        _timeline_search(loaded)
        mark("search index built ahead")
        _between_pages()
        turns = lineage_services.turns(loaded)
        lineage_services.response_chain(loaded)
        if turns and turns[0].messages:     # the message the page picks first: carried by every call, 0.09 s
            lineage_services.calls_including(loaded, turns[0].messages[0].id)
    return _counting(build)


def series_ahead(loaded: Loaded) -> Future | None:
    """After a page run of a big trace whose counting process is counting or has stored the token series: the
    series read into this server in the background once it is stored, and the Tokens page's views of it
    (``_SERIES_VIEWS``), once per trace. The Timeline reads only the estimates it shows
    (``estimate_services.row_estimates``), so without this the Tokens page's first visit would read it (0.1 s at
    25,000 calls on a quiet server, 0.27 s beside the first open's background work). A count that fails is left to
    the page, which says so. The future, or None."""
    digest = loaded.digest
    if (len(loaded.trace.calls) < opening.BIG_CALLS or opening.counted(digest)
            or not (token_worker.running(digest) or token_worker.done(digest))):
        return None
    if not _first_time((digest, "", "series")):
        return None

    def read() -> None:
        token_worker.wait_series(digest)
        if token_worker.is_stored(digest):
            for step in _SERIES_VIEWS:
                _between_pages()
                step(loaded)
            mark("series read ahead")
    return _counting(read)


def first_view_ahead(loaded: Loaded, profile: str) -> threading.Thread | None:
    """After a page run of a big trace whose Replay page's first view a worker computes or has stored: the view
    read back into this server in the background once it is stored, in a quiet moment, once per trace and profile
    (``replay_worker.stored_view``: the file and its shape check, 0.1 s of the page's 0.2 s script at 25,000 calls),
    so the page's first visit does not. A thread of its own: it waits for the worker (seconds), which the counting
    thread's next trace must not. The thread, or None."""
    digest = loaded.digest
    if len(loaded.trace.calls) < opening.BIG_CALLS or not (replay_worker.running(digest, profile)
                                                          or replay_worker.is_stored(digest, profile)):
        return None
    if not _first_time((digest, profile, "first view")):
        return None
    epoch = residency.epoch()

    def read() -> None:
        if replay_worker.wait(digest, profile) is None:      # done (a failure is left to the page, which says it)
            _between_pages()
            if residency.epoch() == epoch:      # the server has not dropped the trace since
                replay_worker.stored_view(digest, profile, len(rs.default_specs()))
                mark("first view read ahead")
    thread = threading.Thread(target=read, name="first-view-ahead", daemon=True)
    thread.start()
    return thread


_SERIES_VIEWS: tuple[Callable[[Loaded], object], ...] = (
    services.token_series, services.call_bins, services.series_facts,
    lambda loaded: services.cumulative(loaded, services.pricing(loaded)))
"""What ``series_ahead`` builds, in order: the series, then the Tokens page's views of it at the trace's own price
(its run at 25,000 calls was 0.45 s with them to build, 0.08-0.15 s without)."""


def _counting(fn: Callable[[], object]) -> Future:
    """``fn()`` on the counting thread: its own, so the replay warm-up does not queue behind it (nor it behind
    them)."""
    global _count_pool
    if _count_pool is None:
        _count_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="token-count")
    return _submitter(_count_pool, _script_context())(fn)


_count_pool: ThreadPoolExecutor | None = None


def _tokens_page(loaded: Loaded) -> None:
    """The Tokens page's first-visit views (its token series is the first open's)."""
    for step in _SERIES_VIEWS[1:]:
        step(loaded)
    services.sampled_texts(loaded)
    services.largest_messages(loaded, 10)


def _replay_form(loaded: Loaded) -> None:
    """What the Replay page's form shows before its view: the proposed probes and the trace's price."""
    rs.proposed_probes(loaded)
    rs.pricing(loaded)


def _timeline_search(loaded: Loaded) -> None:
    """What the Timeline's first search reads besides its query: every body's text and each call's runs (0.2 s at
    25,000 calls)."""
    services.search_index(loaded.digest, loaded.trace)


def wait(timeout: float | None = None) -> None:
    """Until a warm-up waiting for a quiet moment has started and the last one started has finished, and the
    counting thread has done the jobs queued so far (their errors are the page's to meet: not raised here)."""
    timer = _timer
    if timer is not None:
        timer.join(timeout)
    if _last is not None:
        _last.exception(timeout)
    if _count_pool is not None:
        _count_pool.submit(lambda: None).result(timeout)


def _derive(loaded: Loaded, replays: list[Future], lang: str) -> None:
    """What the page derives from its replays on a first visit, with the proposed probes (no Streamlit call:
    this runs outside any script run)."""
    results = [f.result() for f in replays]
    probes = rs.page_probes(loaded)
    for r in results:
        rs.totals(r)
    matrices = rs.retention(loaded, results, probes)
    if probes:
        rs.heatmap(matrices)
        rs.forget_stories(loaded, results, matrices, lang)
    rs.message_by_id(loaded)
