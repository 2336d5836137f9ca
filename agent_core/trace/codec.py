"""The rules by which a trace file leaves out what the reader can predict.

Per-call and per-add metadata, not message bodies, is what makes a long
trace bigger than its messages, so the writer omits every field equal to its
prediction from the events before it (docs/trace-format.md, "Left-out
fields"). Writer and reader both keep a ``Cursor`` and advance it with the
same functions here, so the two sides cannot drift apart.
"""
from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from agent_core.core.msg import parse_timestamp

from . import upgrades as _upgrades

FORMAT_NAME = "chain-studio-trace"
"""The header's ``format``: how a trace file is told from every other JSONL."""
FORMAT_VERSION = _upgrades.CURRENT_VERSION
"""The version this code writes; older ones are upgraded on read (``upgrades.py``)."""

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MS = timedelta(milliseconds=1)
_DIGITS = "0123456789"


@dataclass
class Cursor:
    """What both sides remember between events."""

    add_count: int = 0
    """Every add so far, policy-made ones included: the index space of ``messages_ref``."""
    last_add_id: str | None = None
    """The previous add's id: an add without ``id`` has this one's successor (``next_id``)."""
    last_add_ms: int | None = None
    """The previous add's time in epoch milliseconds: an add without ``ts`` is ``dt`` ms later."""
    last_body: int | None = None
    """The most recently defined body: a new body may be written as a patch of it."""
    last_call: int = -1
    """A call event without ``call`` is the next call."""
    request_body: int | None = None
    """A call event without ``request_body`` (or ``request``) has the previous one's."""
    tools_body: int | None = None
    """A call event without ``tools_body`` has the previous one's (null: no tools)."""
    runs: list = field(default_factory=list)
    runs_adds: int = 0
    """The previous payload's ``messages_ref`` and ``add_count`` when it was made."""
    started_ms: int | None = None
    """The previous call's ``started_at`` in epoch ms, when it was a canonical timestamp."""
    last_response: Any = None
    """Response patches apply to the previous call event's response."""


def epoch_ms(ts: datetime) -> int:
    """Milliseconds since the epoch, rounded down like ``format_timestamp``."""
    return (ts - _EPOCH) // _MS


def from_epoch_ms(ms: int) -> datetime:
    return _EPOCH + ms * _MS


def format_ms(ms: int) -> str:
    """``format_timestamp(from_epoch_ms(ms))`` without strftime (the reader does it once per call)."""
    t = from_epoch_ms(ms)
    return (f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}."
            f"{t.microsecond // 1000:03d}Z")


def canonical_ms(text: Any) -> int | None:
    """Epoch ms of a timestamp string in the one form the writer produces, else None (kept verbatim)."""
    if not isinstance(text, str) or len(text) != 24 or not text.endswith("Z"):
        return None
    try:
        ms = epoch_ms(parse_timestamp(text))
    except ValueError:
        return None
    return ms if format_ms(ms) == text else None


def next_id(previous: str | None) -> str | None:
    """The id predicted after ``previous``: its trailing decimal number plus one, same width."""
    if previous is None:
        return None
    head = previous.rstrip(_DIGITS)
    digits = previous[len(head):]
    if not digits:
        return None
    return head + str(int(digits) + 1).zfill(len(digits))


def predicted_runs(cursor: Cursor) -> list:
    """The payload predicted for a call: the previous one plus every add since (a full history)."""
    runs = [list(r) if isinstance(r, list) else r for r in cursor.runs]
    new = cursor.add_count - cursor.runs_adds
    if new > 0:
        if runs and isinstance(runs[-1], list) and runs[-1][0] + runs[-1][1] == cursor.runs_adds:
            runs[-1][1] += new
        else:
            runs.append([cursor.runs_adds, new])
    return runs


def single_null_message(response: Any) -> bool:
    """One choice whose message is null: where a left-out ``replies`` means the body defined last."""
    choices = response.get("choices") if isinstance(response, dict) else None
    return (isinstance(choices, list) and len(choices) == 1 and isinstance(choices[0], dict)
            and "message" in choices[0] and choices[0]["message"] is None)


def sha256_field(hex_digest: str) -> str:
    """A call's ``sha256`` as written: the digest in unpadded base64url, 43 characters instead of 64 hex."""
    return base64.urlsafe_b64encode(bytes.fromhex(hex_digest)).rstrip(b"=").decode("ascii")


def sha256_hex(text: str) -> str:
    """The hex digest of a ``sha256`` field; ValueError unless it is 32 bytes of unpadded base64url."""
    try:
        digest = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error as err:
        raise ValueError(f"sha256 is not base64url: {err}") from None
    if len(digest) != 32 or sha256_field(digest.hex()) != text:
        raise ValueError(f"sha256 is not a base64url SHA-256 digest: {text!r}")
    return digest.hex()
