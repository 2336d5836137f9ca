"""A pure computation run by a forked child while this process does other work, its result sent back pickled.

A 25,000-call replay lints the replayed payloads (1-2 s) and builds the retention matrices (recorded and
replayed: 0.3-1.3 s) one after the other, though neither reads what the other makes. ``Forked(fn)`` forks a
child that calls ``fn`` and writes its pickled result to a pipe; ``result()`` reads it (after this process's own
work) and waits for the child. The child is this process's own copy, so unpickling its answer trusts nothing
from outside; it runs no exit handlers (``os._exit``: no token store flushed twice, no report written).

Where ``os.fork`` does not exist, the fork fails, or the child fails or answers short, ``fn`` runs here instead:
the same value, later. ``fn`` must not write anything but its result (the child's writes are lost) and must
not depend on what this process does in between.
"""
from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

_UNSET = object()


class Forked(Generic[T]):
    """``fn()`` computed by a forked child (or here, when that is not possible); ``result()`` gives it."""

    def __init__(self, fn: Callable[[], T], fork: bool = True) -> None:
        self._fn = fn
        self._value: object = _UNSET
        self._pid: int | None = None
        self._read: int | None = None
        self.forked = False
        """Whether a child was started (False: ``result`` computes here)."""
        if not fork or not hasattr(os, "fork"):
            return
        read_end, write_end = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read_end)
            os.close(write_end)
            return
        if pid == 0:        # the child: compute, send, leave without the parent's exit handlers
            code = 1
            try:
                os.close(read_end)
                data = memoryview(pickle.dumps(fn(), protocol=pickle.HIGHEST_PROTOCOL))
                size = len(data).to_bytes(8, "little")
                os.write(write_end, size)
                while data:
                    data = data[os.write(write_end, data):]
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        self._pid, self._read = pid, read_end
        self.forked = True

    def result(self) -> T:
        """The child's value; computed here when there was no child or it failed."""
        if self._value is _UNSET:
            self._value = self._from_child()
        if self._value is _UNSET:
            self._value = self._fn()
        return self._value  # type: ignore[return-value]

    def _from_child(self) -> object:
        if self._pid is None or self._read is None:
            return _UNSET
        pid, read_end = self._pid, self._read
        self._pid = self._read = None
        chunks = []
        try:
            while chunk := os.read(read_end, 1 << 20):
                chunks.append(chunk)
        finally:
            os.close(read_end)
            _, status = os.waitpid(pid, 0)
        data = b"".join(chunks)
        if os.waitstatus_to_exitcode(status) != 0 or len(data) < 8 or \
                int.from_bytes(data[:8], "little") != len(data) - 8:
            return _UNSET       # not trusted: computed here
        try:
            return pickle.loads(data[8:])
        except Exception:       # noqa: BLE001 - a damaged answer is recomputed, never trusted
            return _UNSET
