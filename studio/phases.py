"""Timestamps of the studio's phases across its processes, for finding where a page's seconds go.

``CHAIN_STUDIO_PHASES=FILE`` makes the server, its forked children and its worker processes append one line per
phase to ``FILE`` (wall time, pid, process CPU seconds, what); unset (the default), ``mark`` does nothing. Lines
are appended with ``O_APPEND`` in one write each, so the processes' lines do not interleave. Standard library only:
the workers and the preloading entry point import it before anything else.
"""
from __future__ import annotations

import os
import time

ENV = "CHAIN_STUDIO_PHASES"


def mark(what: str) -> None:
    """Append ``what`` with the time, this pid and its CPU seconds to the phase file, when one is named."""
    path = os.environ.get(ENV)
    if not path:
        return
    cpu = time.process_time()
    line = f"{time.time():.3f} {os.getpid()} cpu={cpu:.2f} {what}\n".encode("utf-8", "replace")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    except OSError:
        pass
