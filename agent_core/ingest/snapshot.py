"""Parsed traces kept on disk, so that opening the same big file again does not parse it again.

Parsing a 25,000-call trace (36 MB) costs 1.4-1.7 s of CPU in every process that opens it: each
``chain-studio lint`` or ``replay`` run, each studio server. The result is a pure function of the file's bytes and
the code that parsed it, so a process that parsed a big file leaves the trace here, and the next one loads it in
about a quarter of that time (``pickle``, 0.4 s at 25,000 calls):

- One file per (sha256 of the file's bytes, code digest, Python version), named by their sha256. The code digest
  covers every source file of ``agent_core``: a changed reader or importer never reuses a trace it did not build.
- A file holds the pickle after its sha256; a file that is short, fails its hash or does not load is removed and
  the file parsed again, never trusted.
- Loading accepts only the classes a trace is made of (the dataclasses of ``agent_core.trace``, ``agent_core.core``
  and ``agent_core.apis``, ``Payload`` and ``datetime``'s: ``ALLOWED``), so a file planted in the directory cannot
  make the loader call anything else (a recorder that opens a file, ``os.system``). The directory is created
  mode 0700 and a file written mode 0600 (a trace holds the messages): a directory another user can write to is
  not read from.
- Written whole (a temporary file, then ``os.replace``) by a forked child at niceness 19 (``save_detached``):
  pickling takes about as long as loading the file did (1.0 s at 25,000 calls), and the process that parsed must
  not wait for it, nor share a core with it. The child pickles the trace as it was when it forked, right after
  parsing, whatever the parent does with it next; it closes every file it inherited first (a studio server's
  sockets stay the server's alone) and leaves with ``os._exit``.
- Only files of ``MIN_BYTES`` or more; at most ``MAX_FILES`` kept, the oldest removed.

``CHAIN_STUDIO_TRACE_CACHE`` names the directory, or ``off``; by default it is ``traces/`` inside the token store's
directory (``CHAIN_STUDIO_TOKEN_CACHE``; ``off`` there turns this off too).
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import pickle
import threading
from functools import lru_cache
from pathlib import Path

from agent_core.core.caches import cache_dir, file_sha256, private, source_digest
from agent_core.trace.model import Trace

ENV = "CHAIN_STUDIO_TRACE_CACHE"
MIN_BYTES = 8_000_000
"""Files smaller than this are parsed every time (under about 0.3 s): not worth a file on disk."""
MAX_FILES = 8
"""Traces kept on disk (each about as big as its file); the least recently written beyond this are removed."""
ALLOWED_MODULES = ("agent_core.trace.", "agent_core.core.", "agent_core.apis.")
"""Modules whose dataclasses a stored trace may name (plain records: building one runs no other code)."""
ALLOWED = {("datetime", "datetime"), ("datetime", "timezone"), ("datetime", "timedelta"), ("datetime", "date"),
           ("agent_core.trace.payload", "Payload")}
"""Other classes a stored trace may name."""


def directory() -> Path | None:
    """Where traces are kept, or None when turned off."""
    return cache_dir(ENV, "traces")


@lru_cache(maxsize=1)
def code_digest() -> str:
    """The digest of every source file of ``agent_core`` and the Python version."""
    return source_digest(["agent_core"])


def file_digest(path: Path) -> str | None:
    """The sha256 of a regular file of ``MIN_BYTES`` or more while storing is on, else None (never stored); read
    once per file, size and modification time (a replay asks three times: 25 ms each at 36 MB)."""
    try:
        if directory() is None:
            return None
        st = path.stat()
        return _sha256(str(path), st.st_size, st.st_mtime_ns) if st.st_size >= MIN_BYTES else None
    except OSError:
        return None


@lru_cache(maxsize=8)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    return file_sha256(path)


def stored(digest: str | None) -> bool:
    """Whether a parse is kept for the file of this sha256 (``load`` may still find it damaged)."""
    path = _path(digest) if digest else None
    return path is not None and path.is_file()


def _path(digest: str) -> Path | None:
    root = directory()
    if root is None:
        return None
    key = hashlib.sha256(f"{digest}\0{code_digest()}".encode()).hexdigest()
    return root / f"trace-{key}.pickle"



class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> type:
        found = super().find_class(module, name) if (module, name) in ALLOWED or \
            module.startswith(ALLOWED_MODULES) else None
        if not isinstance(found, type) or (module, name) not in ALLOWED and not dataclasses.is_dataclass(found):
            raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a stored trace")
        return found


def load(digest: str | None) -> Trace | None:
    """The trace stored for a file of this sha256, or None (not stored, turned off, or damaged: then removed)."""
    path = _path(digest) if digest else None
    if path is None or not private(path.parent):
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    check, body = data[:64], memoryview(data)[65:]
    try:
        if len(data) < 65 or data[64:65] != b"\n" or hashlib.sha256(body).hexdigest().encode() != check:
            raise ValueError("damaged")
        trace = _Unpickler(io.BytesIO(body)).load()
        if not isinstance(trace, Trace):
            raise ValueError("not a trace")
        return trace
    except Exception:      # noqa: BLE001 - whatever a damaged or foreign file raises: parse the file instead
        path.unlink(missing_ok=True)
        return None


def save(digest: str | None, trace: Trace) -> bool:
    """Store ``trace`` as the parse of the file of sha256 ``digest``; False when off or the disk refused."""
    path = _path(digest) if digest else None
    if path is None:
        return False
    try:
        body = pickle.dumps(trace, protocol=5)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not private(path.parent):
            return False
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(hashlib.sha256(body).hexdigest().encode() + b"\n")
            f.write(body)
        os.replace(tmp, path)
        _prune(path.parent)
    except (OSError, pickle.PicklingError, RecursionError, TypeError):
        return False
    return True


NICE = 19
"""The niceness of ``save_detached``'s child: it works for the next process only, so it takes a core only when
none of this one's work wants it. A 25,000-call replay's first run (two counting processes and the report's
writer on 2 cores) took 5.4-5.5 s with it against 5.8-6.3 s at niceness 5, and the run after it still found
the parse on disk (3.0-3.1 s either way)."""


def save_detached(digest: str | None, trace: Trace) -> None:
    """``save`` in a forked child, so the caller does not wait (nothing when off, or where there is no fork); a
    daemon thread of the caller waits for the child's exit, so a long-lived server keeps no zombie."""
    if not digest or _path(digest) is None or not hasattr(os, "fork"):
        return
    try:
        pid = os.fork()
    except OSError:
        return
    if pid:
        reaper = threading.Thread(target=_reap, args=(pid,), name="snapshot-reaper", daemon=True)
        reaper.start()
        _reapers[:] = [r for r in _reapers if r.is_alive()] + [reaper]
        return
    try:       # the child: none of the parent's streams, sockets or files held open, none of its exit work
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1024)
        os.nice(NICE)
        save(digest, trace)
    finally:
        os._exit(0)


_reapers: list[threading.Thread] = []


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:       # reaped by someone else
        pass


def wait_detached() -> None:
    """Wait for the children ``save_detached`` started (tests; a process otherwise leaves them to finish)."""
    while _reapers:
        _reapers.pop().join()


def _prune(root: Path) -> None:
    files = sorted(root.glob("trace-*.pickle"), key=lambda p: p.stat().st_mtime_ns)
    for old in files[:-MAX_FILES] if len(files) > MAX_FILES else []:
        old.unlink(missing_ok=True)
