"""How much memory the traces a server holds may take: past a limit, a new trace's parse first drops the others.

A server keeps every trace it parsed (up to 32) and about twenty caches of views derived from each, keyed by the
trace's digest. At 25,000 calls that is 250-300 MB a trace: four big traces opened one after another in one
server took it to 1,134 MB. So before a trace that is not in memory is parsed, a server whose resident memory is
over ``limit_mb()`` and that holds ``KEEP_LARGE`` other large traces drops every trace it holds and everything
derived from them, as a server started anew would have none, then parses. Two large traces stay side by side
(two tabs, one on each, do not make each other read their trace again on every page: a server's resident memory
hardly shrinks after a drop, the allocator keeps the pages for the next trace); a third drops them.

All of them, not the oldest: Streamlit's caches drop an entry only by age or all at once, and a derived view
kept while its trace went would serve a second parse of that trace values built on the first (objects looked up
by identity, two copies in memory). Emptied together, the caches cannot mix two parses. What the server keeps on
disk (the parse, token counts, lint findings, the Replay page's first view: ``view_store``, ``snapshot``) is not
touched, so a dropped trace opened again is read back rather than computed.

Only when quiet: no other page run, background job (``warmup``) or preload holds a trace, since each would store
what it derives from its trace in the caches just emptied. Each of those runs inside ``in_use``. Nor does the run
itself hold another trace (the Compare page's first one, the Traces page's open one): so only the first trace a run
reads can drop the others. Otherwise the trace is parsed beside them, and the next new trace tries again.

Besides Streamlit's caches, the modules holding such state register how to drop it (``on_evict``); this module
imports none of them.
"""
from __future__ import annotations

import gc
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import streamlit as st

from agent_core.core.heap import give_back
from agent_core.trace.tokens import forget_counted_objects
from studio.phases import mark

LIMIT_ENV = "CHAIN_STUDIO_CACHE_MB"
"""Environment variable: the resident memory (MB) above which a new trace's parse drops the others first."""
DEFAULT_LIMIT_MB = 512
"""One 25,000-call trace with its pages and replays holds about 490 MB: past it, two large traces are kept and a
third drops them (``KEEP_LARGE``), and the server stays under 1 GB (``benchmarks/browser.py --switch``; README)."""
KEEP_LARGE = 2
"""Large traces (``LARGE_BYTES``) held beside which a new one, past the limit, drops them all (where the resident
memory cannot be read, no ``/proc``, the count alone decides)."""
LARGE_BYTES = 1_000_000
"""A trace read from this many bytes or more is large (at 25,000 calls: 36 MB read, about 250 MB held)."""

_lock = threading.RLock()     # held while evicting: a hook that ends a job (``release``) must not wait on it
_users = 0
_run = threading.local()
"""``held``: the digests the current thread's work has read (``admit``), while it is ``in_use``."""
_resident: dict[str, int] = {}
"""digest -> the bytes it was read from, for each trace read into memory since the last eviction."""
_files: dict[tuple[str, int, int], str] = {}
"""(path, size, mtime_ns) -> the digest of that version of a file read into memory."""
_hooks: list[Callable[[], None]] = []
_epoch = 0
_sweeps_due = 0
_sweep_armed = False
SWEEPS = 3
"""After an eviction, the heap is swept (``_sweep``) at each of the next this many quiet moments."""
SWEEP_DELAY_S = 1.0
"""How long the server must have been quiet before a sweep: the run before has delivered its page by then."""


def limit_mb() -> float:
    """``CHAIN_STUDIO_CACHE_MB`` when set to a number, else ``DEFAULT_LIMIT_MB``."""
    try:
        return float(os.environ.get(LIMIT_ENV, DEFAULT_LIMIT_MB))
    except ValueError:
        return DEFAULT_LIMIT_MB


def rss_mb() -> float | None:
    """This process's resident memory in MB (Linux's ``/proc``), None where it cannot be read."""
    try:
        with open("/proc/self/statm", "rb") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


@contextmanager
def in_use() -> Iterator[None]:
    """Around work that holds a parsed trace and fills the caches from it (a page run, a background job): no
    eviction meanwhile, except by this work itself when it is the only one."""
    hold()
    outer = getattr(_run, "held", None)
    _run.held = set()
    try:
        yield
    finally:
        _run.held = outer
        release()


def hold() -> None:
    """``in_use`` entered by hand (a job counted from when it is queued: ``release`` when it has run)."""
    global _users
    with _lock:
        _users += 1


def release() -> None:
    global _users, _sweep_armed
    with _lock:
        _users -= 1
        arm = bool(_sweeps_due) and _users == 0 and not _sweep_armed
        _sweep_armed = _sweep_armed or arm
    if arm:         # one sweep per quiet moment, however many jobs end in it
        timer = threading.Timer(SWEEP_DELAY_S, _sweep)
        timer.daemon = True
        timer.start()


def epoch() -> int:
    """How many evictions this server has made: work started before one must not fill the caches after it."""
    return _epoch


def on_evict(hook: Callable[[], None]) -> Callable[[], None]:
    """Have an eviction call ``hook`` (it drops one module's traces and derived state); returns it."""
    _hooks.append(hook)
    return hook


def parsed(digest: str, size: int) -> None:
    """The trace ``digest`` was just read into memory from ``size`` bytes."""
    with _lock:
        _resident[digest] = size


def read_from(digest: str, version: tuple[str, int, int]) -> None:
    """The trace ``digest`` in memory is the file at ``version`` (path, size, mtime_ns)."""
    with _lock:
        _files[version] = digest


def digest_of(version: tuple[str, int, int]) -> str | None:
    """The digest of the file at ``version`` when that trace is in memory, else None."""
    with _lock:
        digest = _files.get(version)
        return digest if digest in _resident else None


def admit(digest: str) -> bool:
    """Before ``digest`` is read into memory: when it is not there, the server holds ``KEEP_LARGE`` other large
    traces and is over its limit, drop every trace if nothing else uses them (see the module). True when it did."""
    held = getattr(_run, "held", None)
    with _lock:
        others = bool(held) and held != {digest}
        if held is not None:
            held.add(digest)
        large = sum(size >= LARGE_BYTES for d, size in _resident.items() if d != digest)
        if digest in _resident or large < KEEP_LARGE or others or _users > 1:
            return False
        rss = rss_mb()
        if rss is not None and rss <= limit_mb():
            return False
        _evict(rss)
        return True


def _evict(rss: float | None) -> None:
    global _epoch, _sweeps_due
    _epoch += 1
    _sweeps_due = SWEEPS
    _resident.clear()
    _files.clear()
    st.cache_resource.clear()       # every parse and every view derived from one
    st.cache_data.clear()
    forget_counted_objects()        # the shared token counters' per-object counts keep the messages alive
    for hook in _hooks:
        hook()
    give_back()     # the allocator's freed pages back to the system
    mark(f"evicted: {rss or 0:.0f} MB -> {rss_mb() or 0:.0f} MB")


def _sweep() -> None:
    """A quiet moment after an eviction: what the dropped caches held is frozen out of the collector (``core/heap.py``)
    and not all of it is acyclic, and a page's names hold its trace (a page's names and its functions are a cycle,
    kept by the session's widget callbacks until that session's next run of another page): frozen, they would never
    be collected. So the frozen heap is thawed, collected and the rest frozen again, about a second at 25,000 calls,
    at each of the next ``SWEEPS`` quiet moments; skipped while a run is under way."""
    global _sweeps_due, _sweep_armed
    with _lock:
        _sweep_armed = False
        if _users or not _sweeps_due:
            return
        before = rss_mb()
        gc.unfreeze()
        found = gc.collect()
        gc.freeze()
        give_back()
        _sweeps_due -= 1
    mark(f"swept {found} objects: {before or 0:.0f} MB -> {rss_mb() or 0:.0f} MB")
