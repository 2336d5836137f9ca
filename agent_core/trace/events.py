"""What memory and the client report: a trim or clear (``MemoryEvent``) and one HTTP attempt (``CallAttempt``).

A ``Recorder`` (recorder.py) receives them; the ``TraceWriter`` (writer.py)
writes them to a trace file.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from .payload import FromPayload, Payload


@dataclass
class MemoryEvent:
    """A trim or a clear: which policy removed which messages, and why."""

    type: str
    """``trim`` or ``clear``."""
    policy: str
    """The policy name (``clear`` for /clear)."""
    removed: list[str]
    """Ids of the removed messages, oldest first."""
    reason: str
    """One sentence a person understands."""
    params: dict = field(default_factory=dict)
    """The policy's parameters when it ran."""
    added: list[str] = field(default_factory=list)
    """Ids of messages the policy put in (a summary), if any."""

    def export(self) -> dict:
        data = {"type": self.type, "policy": self.policy, "params": self.params,
                "removed": self.removed, "reason": self.reason}
        if self.added:
            data["added"] = self.added
        return data


@dataclass
class CallAttempt:
    """One HTTP attempt of one API call, exactly as it went over the wire."""

    call: int
    """Index of the logical API call (0-based); retries share it."""
    attempt: int
    """1 for the first try, 2.. for SDK retries."""
    method: str
    url: str
    """Full URL with the query string; never holds credentials."""
    request_body: Any = FromPayload(Payload.request, resets=True)
    """The request JSON as parsed from the bytes sent (key order kept); rebuilt from ``payload`` when set."""
    status: int | None = None
    """HTTP status, or None when no response came (timeout, refused)."""
    response_body: Any = None
    """Parsed response JSON (a streamed response is reassembled into one completion)."""
    error: str | None = None
    """Transport error or non-2xx body text, with any API key removed."""
    latency_ms: float | None = None
    started_at: str | None = None
    stream: bool = False
    message_ids: list[str] | None = None
    """Ids of the memory messages that made the payload, when known."""
    purpose: str = "chat"
    """Why the call was made: chat, summary, counterfactual ..."""
    request_sha256: str | None = None
    """SHA-256 (hex) of the raw request bytes as they went over the wire; None when those bytes were not seen
    (an imported log, a synthetic call) or there were none. Never computed from ``request_body``."""
    payload: Payload | None = field(default=None, init=False, repr=False, compare=False)
    """For an attempt read from a trace file: its messages as runs, ``request_body`` rebuilt from them."""

    @property
    def usage(self) -> dict | None:
        body = self.response_body
        return body.get("usage") if isinstance(body, dict) else None

    @staticmethod
    def sha256_of(raw: bytes | None) -> str | None:
        """``request_sha256`` for the bytes a recorder saw being sent (None for no body)."""
        return hashlib.sha256(raw).hexdigest() if raw else None
