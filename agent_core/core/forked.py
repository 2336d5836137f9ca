"""A function computed in a forked child while the caller goes on; its value comes back pickled through a pipe.

For work that is independent of the caller's next steps and big enough to pay for a fork (a second replay beside
the first, on the machine's other core). The child runs no exit handlers (``os._exit``) and writes nothing but its
value. Nothing is lost when it cannot run: without ``os.fork``, when the fork fails, or when the child fails or
answers short, ``Forked.result`` computes the value in the caller, whose own exception is then the one raised.
"""
from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


def write_all(fd: int, data: bytes) -> None:
    """All of ``data`` written to the file descriptor ``fd`` (a pipe may take it in parts)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_all(fd: int) -> bytes:
    """What the file descriptor ``fd`` gives until its end."""
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


class Forked(Generic[T]):
    """``fn()`` started in a forked child at construction; ``result()`` is its value."""

    def __init__(self, fn: Callable[[], T]) -> None:
        self._fn = fn
        self._pid: int | None = None
        self._fd: int | None = None
        if not hasattr(os, "fork"):
            return
        read_end, write_end = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read_end)
            os.close(write_end)
            return
        if pid == 0:        # the child: the value, then leave without the parent's exit handlers
            code = 1
            try:
                os.close(read_end)
                write_all(write_end, pickle.dumps(fn(), protocol=pickle.HIGHEST_PROTOCOL))
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        self._pid, self._fd = pid, read_end

    @property
    def forked(self) -> bool:
        """Whether a child computes the value (False: ``result`` will)."""
        return self._pid is not None

    def result(self) -> T:
        """The child's value once it has exited; computed here when there was no child or it failed."""
        if self._pid is not None:
            pid, fd, self._pid, self._fd = self._pid, self._fd, None, None
            try:
                data = read_all(fd)     # before the wait: a child blocked on a full pipe never exits
            finally:
                os.close(fd)
                _, status = os.waitpid(pid, 0)
            if os.waitstatus_to_exitcode(status) == 0 and data:
                try:
                    return pickle.loads(data)       # our own child's bytes
                except Exception:  # noqa: BLE001 - cut short or unreadable: computed here instead
                    pass
        return self._fn()
