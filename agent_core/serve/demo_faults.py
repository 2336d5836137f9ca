"""The demo model's injected faults in each wire API's own shape (``X-Demo-Fault``, see ``demo_server``).

``demo_server`` answers ``400 401 429 500 timeout malformed cut-stream`` (and their ``-once`` forms) on every
endpoint. Chat Completions keeps its own code there; the Responses, Anthropic Messages and Gemini endpoints get
a ``FaultReply`` from their module (``demo_responses.fault``, ``demo_anthropic.fault``, ``demo_gemini.fault``):
the provider's error envelope and status, or a stream cut mid-way in that API's own event shape (a plain,
non-streamed request gets its JSON body cut mid-way: the promised ``Content-Length`` is never reached).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

MALFORMED = b"<html>this is not JSON"
"""What the ``malformed`` fault sends on every endpoint: HTTP 200, ``application/json``, a body that is not JSON."""


@dataclass
class FaultReply:
    """One injected fault as the HTTP handler sends it."""

    status: int
    """The HTTP status."""
    data: bytes
    """The body bytes that are sent (all of them; see ``length``)."""
    content_type: str = "application/json"
    """The Content-Type header."""
    headers: dict[str, str] = field(default_factory=dict)
    """Further headers (``Retry-After`` ...)."""
    length: int | None = None
    """The Content-Length announced; None: ``len(data)``, or no length at all when ``stream``. Larger than
    ``data``: the connection closes before the body is complete (a cut plain response)."""
    stream: bool = False
    """An event stream: no Content-Length, the connection closes after ``data`` (cut when ``data`` lacks the
    stream's last event)."""


def error(status: int, payload: dict, headers: dict[str, str] | None = None) -> FaultReply:
    """An error answer: ``payload`` (the provider's envelope) as JSON with ``status``."""
    return FaultReply(status, json.dumps(payload, ensure_ascii=False).encode("utf-8"), headers=headers or {})


def malformed() -> FaultReply:
    return FaultReply(200, MALFORMED)


def cut_body(payload: dict) -> FaultReply:
    """A plain (non-streamed) answer cut mid-way: half the JSON body of ``payload``, the whole length announced."""
    data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    return FaultReply(200, data[:len(data) // 2], length=len(data))


def cut_stream(data: bytes, content_type: str = "text/event-stream") -> FaultReply:
    """A streamed answer cut mid-way: ``data`` (the stream's first events, never its last) then the end."""
    return FaultReply(200, data, content_type=content_type, stream=True)


def kind_of(fault: str) -> str:
    """The fault without its ``-once`` suffix."""
    return fault.removesuffix("-once")


def wants_stream(body: Any) -> bool:
    return isinstance(body, dict) and body.get("stream") is True
