"""A worker process the server starts (``token_worker``, ``replay_worker``): started with its stderr kept,
waited for, its failure read back as one line, stopped with the server; and, on the worker's side, its exit when
the server is gone.

Nothing here renders; both workers' modules keep their own tables of jobs.
"""
from __future__ import annotations

import atexit
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

_ROOT = str(Path(__file__).resolve().parent.parent)
_started: list["Worker"] = []
_lock = threading.Lock()


class Worker:
    """One worker process: ``proc``, its stderr (an unnamed temporary file: nothing to remove, whatever happens
    to the server) and, once it has exited, why it failed."""

    def __init__(self, proc: subprocess.Popen, errors: IO[bytes], what: str) -> None:
        self.proc, self.errors, self.what = proc, errors, what
        self.failed: str | None = None

    @classmethod
    def spawn(cls, module: str, args: list[str], what: str) -> "Worker | None":
        """``python -m module *args --parent PID``, or None when no process could be started. ``what`` names the
        worker in its failure (``the counting process exited with code 1``)."""
        errors = None
        try:
            errors = tempfile.TemporaryFile()     # noqa: SIM115 - read and closed when the worker has exited
            proc = subprocess.Popen([sys.executable, "-m", module, *args, "--parent", str(os.getpid())],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors,
                                    close_fds=True, cwd=_ROOT)
        except OSError:
            if errors is not None:
                errors.close()
            return None
        worker = cls(proc, errors, what)
        with _lock:
            _started.append(worker)
        return worker

    def running(self) -> bool:
        return self.proc.poll() is None

    def wait(self, timeout: float | None = None) -> str | None:
        """Until the worker has exited (None when ``timeout`` passes first); its failure as one line, or None."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        return self.failure()

    def failure(self) -> str | None:
        """Why the worker failed: the last line of its stderr; None while it runs or when it did not fail."""
        if self.running():
            return None
        with _lock:
            if self.failed is None and self.proc.returncode != 0:
                try:
                    self.errors.seek(0)
                    lines = self.errors.read().decode("utf-8", errors="replace").strip().splitlines()
                except (OSError, ValueError):      # ValueError: closed (read before)
                    lines = []
                self.failed = lines[-1] if lines else f"the {self.what} exited with code {self.proc.returncode}"
            self.errors.close()
        return self.failed


@atexit.register
def _stop_all() -> None:
    for worker in list(_started):
        if worker.running():
            worker.proc.terminate()


def attach(parent: int | None, poll_s: float, nice: int) -> bool:
    """In the worker: False when the server that started it (``parent``) is gone already; else exit when it goes
    (``watch_parent``) and run at ``nice``."""
    if parent is not None:
        if os.getppid() != parent:
            return False
        watch_parent(parent, poll_s)
    try:
        os.nice(nice)
    except OSError:
        pass
    return True


def run_reporting(path: Path, work: Callable[[], None]) -> int:
    """``work()``'s exit code: 0, or 1 with its failure as one line on stderr (what ``Worker.failure`` reads back
    for the page)."""
    try:
        work()
    except OSError as err:
        print(f"{path.name}: {err.strerror or err}", file=sys.stderr)
        return 1
    except Exception as err:  # noqa: BLE001 - one line for the page, whatever the work raised
        print(f"{type(err).__name__}: {err}", file=sys.stderr)
        return 1
    return 0


def watch_parent(parent: int, poll_s: float) -> None:
    """In the worker: exit at once when the server that started it is gone (the worker is then re-parented)."""
    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(3)
            time.sleep(poll_s)
    threading.Thread(target=watch, daemon=True, name="parent-watch").start()
