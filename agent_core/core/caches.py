"""Where Chain Studio keeps what it computed between processes, and the digest of the code that computed it.

Three stores share one directory (``CHAIN_STUDIO_TOKEN_CACHE``, default ``~/.cache/chain-studio/token-counts``):
token counts (``trace/token_store.py``), parsed traces (``ingest/snapshot.py``, ``traces/``) and the studio's
lint findings and token series (``studio/view_store.py``, ``views/``). Each can be pointed elsewhere or turned
off with its own variable; ``off`` for the token store turns the other two off as well.
"""
from __future__ import annotations

import hashlib
import os
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

from .paths import PROJECT_ROOT

OFF = ("off", "0", "no", "false")
"""Values of a cache directory variable that turn the cache off."""


def cache_root() -> Path | None:
    """``CHAIN_STUDIO_TOKEN_CACHE`` (default ``~/.cache/chain-studio/token-counts``), or None when it is off."""
    configured = os.environ.get("CHAIN_STUDIO_TOKEN_CACHE", "")
    if configured.lower() in OFF:
        return None
    return Path(configured) if configured else \
        Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "chain-studio" / "token-counts"


def cache_dir(env: str, name: str) -> Path | None:
    """The directory the variable ``env`` names, or None when it is off; by default ``name/`` in ``cache_root``."""
    configured = os.environ.get(env, "")
    if configured.lower() in OFF:
        return None
    if configured:
        return Path(configured)
    root = cache_root()
    return root / name if root is not None else None


def source_digest(folders: Iterable[str]) -> str:
    """sha256 over the Python version and the path and bytes of every source file under ``folders`` (relative to
    the project): what a stored result was computed by."""
    h = hashlib.sha256(sys.version.encode() + b"\0")
    for folder in folders:
        for path in sorted((PROJECT_ROOT / folder).rglob("*.py")):
            h.update(str(path.relative_to(PROJECT_ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def file_sha256(path: str | Path) -> str:
    """The sha256 of a file's bytes, read in 1 MB blocks (the key of every store above); raises ``OSError``."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def private(path: Path) -> bool:
    """Whether ``path`` (a store's directory or file) exists and only this user can write to it: what another user
    could write is never read back."""
    try:
        st = path.stat()
    except OSError:
        return False
    return st.st_uid == os.getuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
