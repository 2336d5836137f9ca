"""Message ids that are unique and sort by creation within a process.

``msg_<process tag>-<counter>``: the tag is the process's start time in
milliseconds (hex) plus random bits, so ids of different processes never
collide and sort by process start; the zero-padded decimal counter orders a
process's own ids. Consecutive ids differ only in that trailing number, so a
trace file can leave them out (docs/trace-format.md, "Left-out fields").
"""
from __future__ import annotations

import itertools
import os
import threading
import time

_lock = threading.Lock()


def _fresh_tag() -> str:
    return f"{int(time.time() * 1000):011x}{os.urandom(3).hex()}"


_tag = _fresh_tag()
_counter = itertools.count()


def _reseed_after_fork() -> None:
    """A forked child must not mint its parent's next ids."""
    global _tag, _counter
    _tag, _counter = _fresh_tag(), itertools.count()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reseed_after_fork)


def new_id(prefix: str = "msg") -> str:
    """Return a fresh id such as ``msg_19adf3a1b2cab12cd-00000001``."""
    with _lock:
        seq = next(_counter)
    return f"{prefix}_{_tag}-{seq:08d}"
