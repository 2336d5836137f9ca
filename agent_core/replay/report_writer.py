"""The replay report's ``messages`` written by a forked child while the replay is linted.

The default JSON report (``references.py``) starts with every replayed message listed once: 36 MB of the 45 MB
report of a 25,000-call max-messages replay, 100 MB of summary-window's 112 MB (17,836 running summaries), and
0.3-0.8 s of JSON encoding. What it lists depends only on the replayed payloads, not on the linter's findings,
so once the memory walk is done a forked child writes the document's head (up to and including ``messages``)
while the process goes on to lint the payloads and build the retention matrices on the other core; then it
waits for the child and writes the rest. The bytes are exactly those of ``write_json`` of the whole document
(``json_out.py : write_members``).

Only for a stream with a file descriptor (a pipe, a file; not ``io.StringIO``), where ``os.fork`` exists and the
replay is big enough to gain (``MIN_CALLS``); otherwise, and when the fork fails, the report is written whole as
before. The child closes nothing the parent needs, runs no exit handlers (``os._exit``) and writes nothing but
its part; a child that fails makes the command fail (``ChainStudioError``) rather than print a broken document.
"""
from __future__ import annotations

import os
from typing import Any, TextIO

from agent_core.core.errors import ChainStudioError

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
    """Starts the child that writes the report's head for ``result`` to ``out``; ``finish`` writes the rest."""

    def __init__(self, result: ReplayResult, out: TextIO) -> None:
        self.out = out
        self.runs = PayloadRuns(result)
        self.pid: int | None = None
        head = self.runs.head(result)
        out.flush()
        try:
            pid = os.fork()
        except OSError:
            write_members(head, out, first=True, last=False)     # no child: written here, the same bytes
            return
        if pid == 0:        # the child: its part, then leave without the parent's exit handlers
            code = 1
            try:
                write_members(head, out, first=True, last=False)
                out.flush()
                code = 0
            finally:
                os._exit(code)
        self.pid = pid

    def wait(self) -> None:
        """Wait for the child's part to be written (raises ``ChainStudioError`` when it failed)."""
        if self.pid is None:
            return
        pid, self.pid = self.pid, None
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise ChainStudioError("writing the replay report failed (the report on the output is incomplete)")

    def finish(self, doc: dict) -> None:
        """Write the members of ``doc`` after ``messages`` and close the document (after the child's part)."""
        self.wait()
        keys = list(doc)
        rest = {k: doc[k] for k in keys[keys.index("messages") + 1:]}
        write_members(rest, self.out, first=False, last=True)
