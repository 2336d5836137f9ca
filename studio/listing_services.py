"""The Traces page's rows: a trace's summary, and a big trace file listed without being read.

Listing a folder of long runs must not read each of them (seconds and hundreds of MB per 25,000-call file): a file
of ``LISTED_BYTES`` or more that the server does not hold in memory (``studio/residency.py``) shows the summary
stored when that version of it was last summarised here (``view_store``, by path, size and modification time, and
the profile), else only its size (``Unread``).
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from studio import opening, residency, services, view_store
from studio.viewmodels import summary as _summary

LISTED_BYTES = opening.BIG_BYTES
"""From this size a trace file is not read to be listed on the Traces page (``listed``)."""
LISTING = "listing"
"""The view store's kind for a big file's summary, by file version and profile (``listed``)."""


@dataclass(frozen=True)
class Unread:
    """A big trace file the Traces page lists without reading it (``listed``)."""

    size: int
    """Its size in bytes."""


def summary(loaded: services.Loaded, profile: str) -> _summary.TraceSummary:
    s = _summary.summarize(loaded.trace, services.token_series(loaded), services.findings(loaded, profile))
    version = _big_version(loaded.source)
    if version is not None and residency.digest_of(version) == loaded.digest:    # not redacted, not grown since
        key = _version_key(version)
        if not view_store.exists(LISTING, key, profile):
            view_store.save(LISTING, key, profile, asdict(s))
    return s


def listed(source: services.Source, profile: str) -> _summary.TraceSummary | Unread:
    """The Traces page's row for ``source``: its summary when it is small or in memory; a big file not in memory is
    not read (seconds and hundreds of MB each) but shows the summary stored when this version of it was last
    summarised (by path, size and modification time), else only its size. Raises ``LoadError`` as ``load``."""
    version = _big_version(source)
    if version is None or residency.digest_of(version) is not None:
        return summary(services.load(source), profile)
    doc = view_store.load(LISTING, _version_key(version), profile)
    try:
        return _summary.TraceSummary(**doc) if isinstance(doc, dict) else Unread(version[1])
    except TypeError:       # stored by other code
        return Unread(version[1])


def _big_version(source: services.Source) -> tuple[str, int, int] | None:
    """(path, size, mtime_ns) of a file source of ``LISTED_BYTES`` or more; None for others."""
    if source.path is None:
        return None
    try:
        stat = Path(source.path).stat()
    except OSError:
        return None
    return (source.path, stat.st_size, stat.st_mtime_ns) if stat.st_size >= LISTED_BYTES else None


def _version_key(version: tuple[str, int, int]) -> str:
    path, size, mtime_ns = version
    return hashlib.sha256(f"{os.path.realpath(path)}\0{size}\0{mtime_ns}".encode()).hexdigest()
