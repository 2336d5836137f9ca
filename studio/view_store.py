"""Views of a trace kept on disk between servers: its lint findings, by trace digest, profile and code.

Linting a 25,000-call trace costs every server that opens it about 0.8 s of CPU on the first open, for a result
that is a pure function of the file's bytes, the provider profile and the code that parsed and linted it. So the
studio keeps it on disk, in the spirit of the token store (``agent_core/trace/token_store.py``):

- One file per (trace digest, profile, code digest), named by their sha256. The code digest is a sha256 of every
  source file of ``agent_core`` and ``studio/viewmodels``: any change to the reader, the linter or what they read
  starts afresh, never reuses a finding of other code.
- A file holds the view as JSON after the sha256 of that JSON; a file that is short, fails its hash or does not
  parse is removed and the view computed again, never trusted. A view whose JSON does not read back equal (a
  tuple, a non-string key) is not stored.
- Written whole (a temporary file, then ``os.replace``), mode 0600: findings quote ids and text of the trace.
- At most ``MAX_FILES`` files; past it the oldest go.

``CHAIN_STUDIO_VIEW_CACHE`` names the directory, or ``off``; by default it is ``views/`` inside the token store's
directory (``CHAIN_STUDIO_TOKEN_CACHE``; ``off`` there turns this off too).
"""
from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path

from agent_core.core.caches import cache_dir, source_digest

ENV = "CHAIN_STUDIO_VIEW_CACHE"
MAX_FILES = 64
"""Views kept on disk; the least recently written beyond this are removed."""


def directory() -> Path | None:
    """Where views are kept, or None when turned off."""
    return cache_dir(ENV, "views")


@lru_cache(maxsize=1)
def code_digest() -> str:
    """The digest of every source file that parses, lints and shapes a view."""
    return source_digest(["agent_core", "studio/viewmodels"])


def _path(kind: str, digest: str, profile: str) -> Path | None:
    root = directory()
    if root is None:
        return None
    key = hashlib.sha256(f"{kind}\0{digest}\0{profile}\0{code_digest()}".encode()).hexdigest()
    return root / f"{kind}-{key}.json"


def exists(kind: str, digest: str, profile: str) -> bool:
    """Whether a file for this view is on disk (one stat; ``load`` still checks it)."""
    path = _path(kind, digest, profile)
    return path is not None and path.is_file()


def load(kind: str, digest: str, profile: str) -> object:
    """The stored view, or None (not stored, turned off, or damaged: then removed)."""
    path = _path(kind, digest, profile)
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    check, body = data[:64], data[65:]
    try:
        if len(data) < 65 or data[64:65] != b"\n" or hashlib.sha256(body).hexdigest().encode() != check:
            raise ValueError("damaged")
        return json.loads(body)
    except ValueError:
        path.unlink(missing_ok=True)
        return None


def save(kind: str, digest: str, profile: str, view: object) -> bool:
    """Store ``view``; False when turned off, not exactly JSON, or the disk refused (never an error)."""
    path = _path(kind, digest, profile)
    if path is None:
        return False
    try:
        body = json.dumps(view, ensure_ascii=False, separators=(",", ":")).encode()
        if json.loads(body) != view:
            return False
    except (TypeError, ValueError):
        return False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
        os.replace(tmp, path)
        _prune(path.parent)
    except OSError:
        return False
    return True


def _prune(root: Path) -> None:
    files = sorted(root.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
    for old in files[:-MAX_FILES] if len(files) > MAX_FILES else []:
        old.unlink(missing_ok=True)
