"""The replay report's ``messages`` written by a forked child while the replay is linted.

The default JSON report (``references.py``) starts with every replayed message listed once: 36 MB of the 45 MB
report of a 25,000-call max-messages replay, 100 MB of summary-window's 112 MB (17,836 running summaries), and
0.3-0.8 s of JSON encoding. What it lists depends only on the replayed payloads, not on the linter's findings,
so once the memory walk is done a forked child writes the document's head (up to and including ``messages``)
while the process goes on to lint the payloads on the other core; then it waits for the child and writes the rest.
The bytes are exactly those of ``write_json`` of the whole document (``json_out.py : write_members``).

The child then does one more piece of work that does not depend on the findings (``then``: the replayed retention
matrix, 0.17-0.45 s at 25,000 calls) and sends it back pickled through a pipe, so the linter (0.5-0.8 s) and it run
side by side. A ``then`` that fails costs nothing but time: ``later`` returns None and the caller computes it.

Only for a stream with a file descriptor (a pipe, a file; not ``io.StringIO``), where ``os.fork`` exists and the
replay is big enough to gain (``MIN_CALLS``); otherwise, and when the fork fails, the report is written whole as
before. The child closes nothing the parent needs, runs no exit handlers (``os._exit``) and writes nothing but
its part; a child that fails makes the command fail (``ChainStudioError``) rather than print a broken document.
"""
from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from typing import Any, TextIO

from agent_core.core.errors import ChainStudioError

from .counting import read_all, write_all
from .json_out import write_members
from .references import PayloadRuns
from .result import ReplayResult

MIN_CALLS = 2_000
"""Replays of fewer calls write their report in one process (the fork would cost more than it saves)."""


def forkable(out: Any) -> bool:
    """Whether ``out`` is a stream a forked child can write to (it has a file descriptor)."""
    if not hasattr(os, "fork"):
        return False
    try:
        out.fileno()
    except (AttributeError, OSError, ValueError):     # io.UnsupportedOperation is an OSError and a ValueError
        return False
    return True


class HeadWriter:
    """Starts the child that writes the report's head for ``result`` to ``out`` and then computes ``then()``;
    ``later`` returns what ``then`` returned, ``finish`` writes the rest of the report."""

    def __init__(self, result: ReplayResult, out: TextIO, then: Callable[[], Any] | None = None) -> None:
        self.out = out
        self.runs = PayloadRuns(result)
        self.pid: int | None = None
        self._fd: int | None = None
        self._later: bytes | None = None
        head = self.runs.head(result)
        out.flush()
        read_end, write_end = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read_end)
            os.close(write_end)
            write_members(head, out, first=True, last=False)     # no child: written here, the same bytes
            return
        if pid == 0:        # the child: its part, then leave without the parent's exit handlers
            code = 1
            try:
                os.close(read_end)
                write_members(head, out, first=True, last=False)
                out.flush()
                code = 0
                if then is not None:
                    write_all(write_end, pickle.dumps(then(), protocol=pickle.HIGHEST_PROTOCOL))
            finally:
                os._exit(code)
        os.close(write_end)
        self.pid, self._fd = pid, read_end

    def later(self) -> Any:
        """What ``then`` returned in the child, once the child is done (None: no child, or ``then`` failed);
        raises ``ChainStudioError`` when the child failed to write its part."""
        self.wait()
        data, self._later = self._later, None
        try:
            return pickle.loads(data) if data else None     # our own child's bytes, from this process's memory
        except Exception:  # noqa: BLE001 - cut short (the child died while writing): computed by the caller
            return None

    def wait(self) -> None:
        """Wait for the child's part to be written (raises ``ChainStudioError`` when it failed)."""
        if self.pid is None:
            return
        pid, fd, self.pid, self._fd = self.pid, self._fd, None, None
        try:
            self._later = read_all(fd)      # read before the wait: a child blocked on a full pipe never exits
        finally:
            os.close(fd)
            _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            self._later = None
            raise ChainStudioError("writing the replay report failed (the report on the output is incomplete)")

    def finish(self, doc: dict) -> None:
        """Write the members of ``doc`` after ``messages`` and close the document (after the child's part)."""
        self.wait()
        keys = list(doc)
        rest = {k: doc[k] for k in keys[keys.index("messages") + 1:]}
        write_members(rest, self.out, first=False, last=True)
