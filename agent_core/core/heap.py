"""A loaded trace's many objects and Python's cyclic garbage collector.

A 25,000-call trace is millions of small objects (parsed dicts and lists,
``Msg``, lint entries). CPython's cyclic collector re-walks every tracked object
on each full collection, so while such a trace loads, and on every lint, replay
or page rerun after it, the collector spends 30-50% of the time proving that
none of them is garbage. ``long_lived`` pauses the collector while they are
built, then moves them to the permanent generation (``gc.freeze``), which later
collections skip. Reference counting still frees them the moment the trace is
dropped, because a trace holds no reference cycles (tests/agent_core/test_heap.py);
a collection just before the pause keeps other garbage from being frozen with it.
"""
from __future__ import annotations

import functools
import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0                  # nested or concurrent loads: the outermost one resumes the collector
_resume = False


@contextmanager
def long_lived() -> Iterator[None]:
    """Build long-lived, acyclic objects inside: no cyclic collection meanwhile, and frozen at the end."""
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            if _resume:
                gc.collect()    # cheap (what is loaded already is frozen), and garbage found now is not frozen
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.freeze()
                gc.enable()


def give_back() -> None:
    """Return the memory freed so far to the system, where the C library can (glibc's ``malloc_trim``; nothing
    elsewhere). Freed blocks otherwise stay in the allocator's arenas, which glibc shares out among threads: a
    process that dropped a 25,000-call replay built on another thread kept most of its pages resident. A few
    milliseconds."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.lru_cache(maxsize=1)
def _malloc_trim() -> Callable[[int], int] | None:
    import ctypes       # here: every command imports this module, few drop a replay

    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):       # not glibc
        return None


_left: list[object] = []
_leaving = [False]


def leave_at_exit() -> None:
    """This process exits when its command returns (``cli/main.py : console``): ``keep`` holds what it is given
    from now on, and the process ends without freeing it."""
    _leaving[0] = True


def keep(*objects: object) -> None:
    """Keep ``objects`` alive until the process exits, when it will exit without freeing them (``leave_at_exit``);
    nothing otherwise (a test, a server). A 25,000-call replay is millions of objects: freeing them one by one
    when the command returns took 0.15-0.2 s of a 3 s run, for memory the exit gives back whole."""
    if _leaving[0]:
        _left.append(objects)
