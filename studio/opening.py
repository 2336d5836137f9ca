"""The first open of a big trace in the studio: progress while it is read, parsed, linted and counted.

A 25,000-call trace takes seconds to parse, lint and count the first time (every later run reads the caches
of ``studio/services.py``). So that the page does not sit blank meanwhile, each step draws a progress bar
with the file's bytes and the trace's calls: a payload log streamed line by line reports bytes read and calls
found as it goes (``_load_line_log``); any other file is parsed whole by the importer, so its bar moves by
step (read and parse N MB, lint N calls, count their tokens, build the call table).

Once a big trace is parsed and its views are built, their objects live as long as the cache holds them:
``gc.freeze()`` moves them out of the cyclic collector's reach, so the collections that every later rerun
triggers do not walk millions of long-lived objects again (at 25,000 calls that walk was about a quarter
of the time of building the call table, linting and counting). Frozen objects are still freed by reference
counting when the cache drops them.
"""
from __future__ import annotations

import gc
import os
import threading
from collections.abc import Callable

import streamlit as st

from agent_core.ingest import detect as _importers
from agent_core.lint.native import trace_profile
from agent_core.trace.model import Trace
from studio import count_child, residency
from studio.components.i18n import tr
from studio.phases import mark

BIG_CALLS = 2000
"""From this many calls the first open shows its steps and freezes the trace's objects out of the GC."""
BIG_BYTES = 20_000_000
"""From this file size the parse alone shows a bar (the call count is not known before parsing)."""
_lock = threading.Lock()


@st.cache_resource(show_spinner=False)
def _done() -> set:
    # Digests (and (digest, profile) pairs) already parsed / prepared in this server: their bar is not drawn
    # again. A plain set (not a cached function) so the bar can be drawn outside any cached function.
    return set()


@st.cache_resource(show_spinner=False)
def _log_traces() -> dict[str, Trace]:
    # A plain dict (not a cached function) so that the first read can draw a progress bar: Streamlit refuses
    # elements drawn from inside a cached function into a container made outside it.
    return {}


def _progress(bar, value: float, text: str) -> None:
    """Draw (or move) the bar in the placeholder ``bar`` (``st.empty()``)."""
    bar.progress(value, text=text)


def _freeze() -> None:
    """Collect what is garbage now, then keep every object alive at this point out of later collections."""
    gc.collect()
    gc.freeze()


def load_line_log(path: str, digest: str) -> Trace:
    """A line-oriented payload log, streamed (no size limit) with a progress bar while it is read the first time."""
    cache = _log_traces()
    if digest in cache:
        return cache[digest]
    bar = st.empty()

    def report(done: int, total: int, calls: int) -> None:
        _progress(bar, min(1.0, done / total) if total else 1.0,
                  tr(f"Reading {done / 1e6:,.0f} of {total / 1e6:,.0f} MB · {calls:,} calls",
                     f"正在读取 {done / 1e6:,.0f} / {total / 1e6:,.0f} MB · {calls:,} 次调用"))
    try:
        trace = _importers.load_any(path, progress=report)
    finally:
        bar.empty()
    while len(cache) >= 4:        # like max_entries: the oldest goes
        cache.pop(next(iter(cache)))
    cache[digest] = trace
    residency.parsed(digest, os.path.getsize(path))
    if len(trace.calls) >= BIG_CALLS:
        _freeze()
    return trace


def parse_file(digest: str, path: str, size: int, parse: Callable[[str, str], Trace]) -> Trace:
    """``parse(digest, path)`` (the cached parse of a whole file), with a bar naming the file's size the first
    time a big file is parsed in this server."""
    done = _done()
    if digest in done or size < BIG_BYTES:
        trace = parse(digest, path)
    else:
        bar = st.empty()
        _progress(bar, 0.05, tr(f"Reading and parsing {size / 1e6:,.1f} MB …", f"正在读取并解析 {size / 1e6:,.1f} MB …"))
        try:
            trace = parse(digest, path)
        finally:
            bar.empty()
    parsed(digest, trace, path, size)
    return trace


def parsed(digest: str, trace: Trace, path: str, size: int) -> None:
    """After the first parse of the file ``path`` (sha256 ``digest``) in this server: a big trace is linted from
    now by a forked child of the server and its token series counted by another, which then keeps the parse on
    disk for the next process (``count_child.fork``; ``warmup.count_ahead`` finds it started); any other parse of
    a big file is kept at once, by a child of its own. Then its bar is not drawn again, and a big trace's objects
    are frozen out of the GC."""
    done = _done()
    with _lock:     # a second thread (the preload's, a page's) waits here until the child that lints is known
        if digest in done:
            return
        # the children lint it too, with the profile a page judges it by unless the user picked another
        if len(trace.calls) < BIG_CALLS or not count_child.fork(digest, trace, path, trace_profile(trace), size):
            count_child.keep_parse(digest, trace, size, detached=True)
        done.add(digest)
        mark("children forked")
    if len(trace.calls) >= BIG_CALLS:
        _freeze()
        mark("frozen")


def mark_prepared(digest: str, profile: str) -> None:
    """The first-open views of ``prepare`` are cached for this trace and profile (built outside a page run:
    ``studio/preload.py``): a page draws no bar for them."""
    if (digest, profile) not in _done():
        _done().add((digest, profile))
        _freeze()


def counted(digest: str, done: bool = False) -> bool:
    """Whether the whole token series of this trace has been computed in this server (``done``: it just was)."""
    if done:
        _done().add(("token series", digest))
    return ("token series", digest) in _done()


def prepared(digest: str, profile: str) -> bool:
    """Whether the first-open steps of ``prepare`` have run for this trace and profile in this server."""
    return (digest, profile) in _done()


def prepare(loaded, profile: str, steps: list[tuple[str, Callable[[], object]]], size: int | None = None) -> None:
    """Run ``steps`` (label in the reader's language, cached view to build) under a progress bar, the first
    time a big trace is shown with ``profile`` in this server; each later run finds them cached, draws nothing."""
    done = _done()
    key = (loaded.digest, profile)
    n = len(loaded.trace.calls)
    if key in done or n < BIG_CALLS:
        return
    where = tr(f"{n:,} calls", f"{n:,} 次调用") + (f", {size / 1e6:,.1f} MB" if size else "")
    bar = st.empty()
    try:
        for i, (label, build) in enumerate(steps):
            _progress(bar, i / len(steps), f"{label} ({where}) …")
            build()
    finally:
        bar.empty()
    done.add(key)
    _freeze()
