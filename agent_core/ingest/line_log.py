"""Line-oriented payload logs (one request body, or ``{"request", "response"}``, per line), read as a stream.

A full-history log re-sends every earlier message on each line: 1,000 calls
make about 600 MB, 25,000 calls terabytes. Reading the whole file and parsing
every line into its own objects costs several times the file in memory. Here
the file is read line by line and each line is parsed against the line before
(``line_parse.py``): a message, or a parameter such as ``tools``, whose JSON
text is exactly the previous line's is that line's object, not parsed again.
So identical messages are one object and memory is bounded by the distinct
messages, not the file; look-alikes that serialize differently (key order,
``1`` / ``1.0`` / ``true``) stay apart. No size limit applies to such a file (a
single-document JSON keeps ``core/limits.py``'s).
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agent_core.core.errors import MalformedTraceError
from agent_core.core.limits import check_body, number_too_long
from agent_core.trace.codec import FORMAT_NAME

from .line_parse import LineParser

Progress = Callable[[int, int, int], None]
"""``progress(bytes_read, total_bytes, lines)``, called every ``PROGRESS_EVERY`` bytes and at the end."""
PROGRESS_EVERY = 8 * 1024 * 1024
"""How often (in bytes read) progress is reported."""
READ_BUFFER = 1024 * 1024
"""The file's read buffer: lines of a full-history log run to megabytes, and the default 8 KB buffer reads such a
line in hundreds of pieces (1 GB log: 1.9 s to read its lines, 0.4 s with this)."""
SNIFF_BYTES = 64 * 1024 * 1024
"""How much of the first line is read to decide the file is a line log (a first line longer than this is not)."""


def _first_line(path: Path) -> bytes:
    with open(path, "rb") as f:
        head = f.readline(SNIFF_BYTES)
    return head


def is_line_log(path: Path) -> bool:
    """A file whose first line is a whole request body or request/response record, and not a Chain Studio
    trace (whose reader has its own format)."""
    try:
        raw = _first_line(path)
        if path.stat().st_size <= len(raw):     # one line: a single document, parsed once, by its reader
            return False
    except OSError:
        return False
    head = raw.lstrip(b"\xef\xbb\xbf").strip()
    if not head.startswith(b"{") or FORMAT_NAME.encode() in head[:4096]:
        return False
    try:
        value = json.loads(head)
    except (ValueError, RecursionError):     # not JSON, a number over the int-string limit, nested too deep
        return False
    if not isinstance(value, dict):
        return False
    request = value.get("request") if isinstance(value.get("request"), dict) else value
    return isinstance(request.get("messages"), list)


def _request_of(row: Any) -> dict | None:
    if not isinstance(row, dict):
        return None
    return row.get("request") if isinstance(row.get("request"), dict) else row


def read_rows(path: Path, progress: Progress | None = None) -> list[tuple[int, Any]]:
    """``list(iter_rows(path, progress))``."""
    return list(iter_rows(path, progress))


def iter_rows(path: Path, progress: Progress | None = None) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed line)`` for every non-blank line, in order, identical messages shared (see the module
    docstring); ``progress`` defaults to ``default_progress`` and counts the lines handed out.

    Raises ``MalformedTraceError`` naming the line and column of the first line that is not JSON.
    """
    total = path.stat().st_size
    progress = progress if progress is not None else default_progress(path)
    parser = LineParser()
    done = next_report = rows = 0
    with open(path, "rb", buffering=READ_BUFFER) as f:
        for number, raw in enumerate(f, start=1):
            done += len(raw)
            if number == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")
            if raw.strip():
                try:
                    value = parser.parse(raw)
                except UnicodeDecodeError:
                    raise MalformedTraceError(str(path), "not UTF-8 text", number, 1) from None
                except json.JSONDecodeError as err:
                    raise MalformedTraceError(str(path), f"invalid JSON: {err.msg}", number, err.colno) from None
                except RecursionError:
                    raise MalformedTraceError(str(path), "JSON nested too deeply", number, 1) from None
                except ValueError:      # an integer over Python's int-string limit
                    raise number_too_long(raw.decode("utf-8", "replace"), str(path), number) from None
                del raw         # the line's bytes: not held while the row is used
                request = _request_of(value)
                messages = request.get("messages") if request is not None else None
                if isinstance(messages, list):
                    check_body(request, str(path), f"the request on line {number}")
                rows += 1
                yield number, value
            if progress is not None and done >= next_report:
                progress(done, total, rows)
                next_report = done + PROGRESS_EVERY
    if progress is not None:
        progress(done, total, rows)


def stderr_progress(label: str) -> Progress:
    """A progress line on stderr, rewritten in place: bytes read of the total, and lines (calls) so far."""
    import sys

    def report(done: int, total: int, lines: int) -> None:
        end = "\n" if done >= total else ""
        sys.stderr.write(f"\r{label}: {done / 1e6:,.0f} of {total / 1e6:,.0f} MB, {lines:,} calls{end}")
        sys.stderr.flush()
    return report


ASKED = {"progress": False}
"""Set by the CLI's ``--progress``: report on stderr even when it is not a terminal."""


def default_progress(path: Path) -> Progress | None:
    """Progress on stderr only when asked (``--progress``) or when stderr is a terminal."""
    import sys

    tty = hasattr(sys.stderr, "isatty") and sys.stderr.isatty() and not os.environ.get("CI")
    return stderr_progress(f"reading {path.name}") if ASKED["progress"] or tty else None
