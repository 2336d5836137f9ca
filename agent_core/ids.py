"""Message ids that are unique and sort by creation time.

A ULID-like string: 12 hex digits of milliseconds since the epoch, then a
per-process counter and random bits, so ids made in the same millisecond
still sort in creation order.
"""
from __future__ import annotations

import itertools
import os
import threading
import time

_lock = threading.Lock()
_counter = itertools.count()
_process_salt = os.urandom(3).hex()
_last_ms = 0


def new_id(prefix: str = "msg") -> str:
    """Return a fresh id such as ``msg_0192f3a1b2c3-00000001-ab12cd``."""
    global _last_ms
    with _lock:
        ms = max(int(time.time() * 1000), _last_ms)
        _last_ms = ms
        seq = next(_counter)
    return f"{prefix}_{ms:012x}-{seq:08x}-{_process_salt}"
