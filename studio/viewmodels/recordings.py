"""Which trace files the Traces list offers: a folder's own, and the recordings in its subfolders."""
from __future__ import annotations

from pathlib import Path

TRACE_SUFFIXES = (".jsonl", ".json", ".traj")
"""File endings listed from the folder itself (samples, recordings, saved imports)."""
SUBFOLDER_SUFFIX = ".jsonl"
"""What is listed one level down: the trace files ``chain-studio proxy`` (``proxy-<time>/``) and ``chain-studio
collect`` (``collect/``) write in their own folders."""


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:            # removed while listing
        return 0.0


def _listing(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except OSError:            # an unreadable subfolder lists nothing; the Traces page still opens
        return []


def trace_files(directory: Path, newest: bool = False, limit: int | None = None,
                subfolders: bool = False) -> list[tuple[Path, str]]:
    """``(file, label)`` of the trace files in ``directory``, by name, or newest first with ``newest``; with
    ``subfolders``, also the ``*.jsonl`` one level down, labelled ``subfolder/name``. At most ``limit`` overall.
    """
    if not directory.is_dir():
        return []
    found: list[tuple[Path, str]] = []
    for entry in directory.iterdir():
        if entry.is_file() and entry.suffix in TRACE_SUFFIXES:
            found.append((entry, entry.name))
        elif subfolders and entry.is_dir():
            found += [(p, f"{entry.name}/{p.name}") for p in _listing(entry)
                      if p.suffix == SUBFOLDER_SUFFIX and p.is_file()]
    if newest:
        stamps = {p: _mtime(p) for p, _ in found}
        found.sort(key=lambda f: (-stamps[f[0]], f[1]))
    else:
        found.sort(key=lambda f: f[1])
    return found[:limit]
