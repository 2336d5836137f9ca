"""The in-memory trace every page, linter and replay works on.

Recorded traces and imported files (payload logs, datasets) all load into
this one shape: the API calls with their exact payloads, the ordered stream
of messages that were ever added, and the memory events between them.
"""
from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from agent_core.core.msg import Msg

from .events import CallAttempt, MemoryEvent
from .packed import PackedJson, Unpacked
from .payload import FromPayload, Payload


@dataclass
class Call:
    """One logical API call: the last attempt's request and outcome, plus every attempt.

    A call read from a trace file keeps its messages as a ``payload`` (runs over
    the trace's shared arrays): ``request``, ``messages`` and ``message_ids``
    then build a fresh list on each access. Read them once per use, and walk
    many calls through ``payload`` (see ``payload_tail``).
    """

    index: int
    """0-based position among the trace's calls."""
    request: dict = FromPayload(Payload.request, resets=True)  # type: ignore[assignment]
    """The exact request body (``model``, ``messages``, ``tools`` ...), rebuilt from ``payload`` when that is
    set. Treat as read-only."""
    response: dict | None = Unpacked()  # type: ignore[assignment]
    """The response body, or None when there was none. A payload log's is kept as text (``packed.py``) and parsed
    on each read: read it once per use."""
    status: int | None = None
    error: str | None = None
    latency_ms: float | None = None
    started_at: str | None = None
    stream: bool = False
    purpose: str = "chat"
    stream_index: int | None = None
    """How many stream messages had been added when the call was made."""
    message_ids: list[str | None] = FromPayload(lambda payload, _: payload.ids(), default=list)  # type: ignore[assignment]
    """Stream id of each payload message (None where it matches no stream message)."""
    attempts: list[CallAttempt] = field(default_factory=list)
    payload: Payload | None = field(default=None, init=False, repr=False, compare=False)
    """The messages as runs over the trace's arrays, for a call read from a trace file (else None)."""

    @property
    def messages(self) -> list[dict]:
        if self.payload is not None:
            return self.payload.messages()
        request = self.request
        msgs = request.get("messages", request.get("contents")) if isinstance(request, dict) else None   # Gemini
        return msgs if isinstance(msgs, list) else []

    @property
    def tools(self) -> list[dict] | None:
        tools = self.payload.tools if self.payload is not None else (
            self.request.get("tools") if isinstance(self.request, dict) else None)
        return tools if isinstance(tools, list) else None

    def request_head(self) -> dict | Any:
        """The request with ``messages`` set to None: every other key, without building the payload list."""
        request = FromPayload.stored(self, "request")
        if self.payload is not None:
            return {**request, **({"tools": self.payload.tools} if self.payload.tools is not None else {})}
        if isinstance(request, dict) and "messages" in request:
            return {**request, "messages": None}
        return request

    @property
    def model(self) -> str | None:
        """The model that answered, else the one requested (only if it is a string: input is untrusted)."""
        for body in (self.response, FromPayload.stored(self, "request")):
            model = body.get("model") if isinstance(body, dict) else None
            if isinstance(model, str) and model:
                return model
        return None

    @property
    def usage(self) -> dict | None:
        response = self.response        # read once: a payload log's response is parsed on each read
        usage = response.get("usage") if isinstance(response, dict) else None
        return usage if isinstance(usage, dict) else None

    @property
    def reported_prompt_tokens(self) -> int | None:
        usage = self.usage or {}      # read once: a payload log's response is parsed on each read
        value = usage.get("prompt_tokens")
        if value is None:       # the Responses API reports input_tokens
            value = usage.get("input_tokens")
        return value if isinstance(value, int) else None

    @property
    def reply(self) -> dict | None:
        """The first choice's message, if the call returned one."""
        stored = Unpacked.stored(self, "response")
        if type(stored) is PackedJson and stored.reply is not None:
            return stored.reply
        try:
            message = self.response["choices"][0]["message"]
        except (TypeError, KeyError, IndexError):
            return None
        return message if isinstance(message, dict) else None

    @property
    def finish_reason(self) -> str | None:
        try:
            return self.response["choices"][0].get("finish_reason")
        except (TypeError, KeyError, IndexError, AttributeError):
            return None

    @property
    def failed(self) -> bool:
        return self.error is not None or (self.status is not None and self.status >= 400)

    @property
    def request_sha256(self) -> str | None:
        """SHA-256 (hex) of the raw bytes the last attempt sent, when the recorder saw them."""
        return self.attempts[-1].request_sha256 if self.attempts else None

    @property
    def bytes_verified(self) -> bool | None:
        """Whether re-serializing ``request`` reproduces the exact bytes sent (``request_sha256``).

        True: the stored body is byte-identical to what went over the wire; False: it re-serializes
        differently (e.g. ``1e2`` sent, ``100.0`` stored; duplicate keys; a redacted copy); None: no hash
        was recorded (an imported log, an older trace), so nothing can be said.
        """
        digest = self.request_sha256
        if digest is None:
            return None
        sent = self.attempts[-1].request_body
        if isinstance(sent, str):       # a body that was not JSON is stored as its text
            return hashlib.sha256(sent.encode("utf-8")).hexdigest() == digest
        # ``request`` is what every page and export shows; a JSON body that is not an object only the attempt has
        return reserializes_to(self.request if isinstance(sent, dict) else sent, digest)

    @property
    def bytes_note(self) -> str:
        """``bytes_verified`` as the one line the Raw JSON tab and ``export --as json`` show."""
        return _BYTES_NOTES[self.bytes_verified]


_BYTES_NOTES = {True: "byte-identical: verified", False: "not verified: the stored body re-serializes differently",
                None: "no raw-bytes hash recorded"}

# How clients serialize a body, most common first: the openai SDK and httpx >= 0.28 write compact JSON with
# non-ASCII as is (openai/_utils/_json.py ``openapi_dumps``, httpx/_content.py ``encode_json``); older httpx,
# requests and hand-written clients use json.dumps' defaults, with or without ``ensure_ascii``.
_SERIALIZATIONS = (
    {"ensure_ascii": False, "separators": (",", ":")},
    {"ensure_ascii": True, "separators": (",", ":")},
    {"ensure_ascii": False, "separators": (", ", ": ")},
    {"ensure_ascii": True, "separators": (", ", ": ")},
)


def reserializes_to(body: Any, sha256: str) -> bool:
    """Whether one of the usual client serializations of ``body`` has this SHA-256 (hex)."""
    for options in _SERIALIZATIONS:
        try:
            data = json.dumps(body, **options).encode("utf-8")
        except (TypeError, ValueError, RecursionError):
            return False
        if hashlib.sha256(data).hexdigest() == sha256:
            return True
    return False


def payload_tail(previous: Call | None, call: Call) -> tuple[list, int] | None:
    """The messages ``call`` adds to ``previous``'s payload and how many it re-sends, if it starts with it.

    None when it does not: the caller then walks the whole payload. For calls
    read from a trace file this compares payload runs, O(runs); otherwise the lists.
    """
    if previous is None:
        return None
    if previous.payload is not None and call.payload is not None:
        if not call.payload.starts_with(previous.payload):
            return None
        n = len(previous.payload)
        return call.payload.messages(n), n
    before, messages = previous.messages, call.messages
    n = len(before)
    try:
        if n and len(messages) >= n and messages[:n] == before:
            return messages[n:], n
    except RecursionError:       # absurdly nested content: compare nothing, walk it whole
        pass
    return None


_ABSENT = object()


def same_head(a: Any, b: Any) -> bool:
    """Whether two request heads are one head: same keys, each value the same object or an equal scalar of
    the same type (a file's calls share their tools list), so the chain of one is the chain of the other."""
    if type(a) is not dict or type(b) is not dict or len(a) != len(b):
        return False
    for k, v in a.items():      # a plain loop: this runs once per call
        w = b.get(k, _ABSENT)
        if v is not w and not (type(v) is type(w) and type(v) in (str, int) and v == w):
            return False
    return True


def message_occurrences(calls: list[Call]) -> list[tuple[int, int, Any, int]]:
    """Where each payload message first appears and how many calls carry it.

    ``(first call index, position in that payload, message, calls carrying it)``,
    by first appearance; one row per payload slot of a plain call, one per added
    message for calls read from a file, found from their runs in O(runs +
    messages) rather than by walking all N payloads of a full history.
    """
    rows: list[tuple[int, int, Any, int]] = []
    bodies: list | None = None
    carried: list[int] = []          # difference array over add indices: calls covering each
    first: dict[int, tuple[int, int]] = {}
    skip: list[int] = []             # skip[j]: the first add index >= j not yet seen (path-compressed)

    def unseen(j: int) -> int:
        root = j
        while skip[root] != root:
            root = skip[root]
        while skip[j] != root:
            skip[j], j = root, skip[j]
        return root

    for call in calls:
        payload = call.payload
        if payload is None or (bodies is not None and payload.added is not bodies):
            rows.extend((call.index, i, m, 1) for i, m in enumerate(call.messages))
            continue
        if bodies is None:
            bodies = payload.added
            carried = [0] * (len(bodies) + 1)
            skip = list(range(len(bodies) + 1))
        position = 0
        for part in payload.parts:
            if type(part) is not tuple:
                rows.append((call.index, position, part[0], 1))
                position += 1
                continue
            start, count = part
            carried[start] += 1
            carried[start + count] -= 1
            j = unseen(start)
            while j < start + count:
                first[j] = (call.index, position + j - start)
                skip[j] = j + 1
                j = unseen(j + 1)
            position += count
    if bodies is not None:
        running, times = 0, []
        for delta in carried[:-1]:
            running += delta
            times.append(running)
        rows.extend((c, i, bodies[j], times[j]) for j, (c, i) in first.items())
    rows.sort(key=lambda r: (r[0], r[1]))
    return rows


@dataclass
class StreamEvent:
    """A memory event placed in the stream: it happened after ``after_add`` adds."""

    after_add: int
    event: MemoryEvent
    calls_before: int | None = None
    """How many calls were made before it, which orders it among calls at the same ``after_add`` (None: first)."""


class _DeferredStream:
    """``Trace.stream``: a list, or rows (``Trace.defer_stream``) turned into ``Msg`` objects on first read."""

    _lock = threading.Lock()     # a cached trace is shared by the studio's session threads

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return None          # the field's default: a fresh list on first read
        if obj.__dict__.get("_pending_stream") is not None:
            with self._lock:
                rows = obj.__dict__.get("_pending_stream")
                if rows is not None:
                    obj.__dict__["_stream"] = [Msg.from_parsed(*row) for row in rows]
                    obj.__dict__["_pending_stream"] = None
        stream = obj.__dict__.get("_stream")
        if stream is None:
            stream = obj.__dict__["_stream"] = []
        return stream

    def __set__(self, obj: Any, value: list[Msg] | None) -> None:
        obj.__dict__["_stream"] = value
        obj.__dict__["_pending_stream"] = None


@dataclass
class Trace:
    """A whole conversation as Chain Studio sees it.

    A trace read from a file builds its ``stream`` of ``Msg`` objects on first
    access: linting and counting a trace need only the payloads.
    """

    source: str
    """Where it came from (a path, ``<pasted>``)."""
    format: str
    """The detected input format (``chain-studio``, ``request-jsonl``, ``tau-bench`` ...)."""
    calls: list[Call] = field(default_factory=list)
    stream: list[Msg] = _DeferredStream()  # type: ignore[assignment]
    """Every message in the order it was added (policy-made summaries excluded); built on first read
    for a trace read from a file."""
    events: list[StreamEvent] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    """What the loader could not map or skipped, in plain sentences."""
    policy_messages: dict[str, Msg] = field(default_factory=dict)
    """Messages a trim policy created (summaries), by id."""

    def defer_stream(self, rows: list[tuple]) -> None:
        """Set the stream as ``Msg.from_parsed`` argument rows, built when first read."""
        self.__dict__["_pending_stream"] = rows

    @property
    def stream_length(self) -> int:
        """``len(self.stream)``, without building the stream's ``Msg`` objects when they are still rows."""
        rows = self.__dict__.get("_pending_stream")
        return len(rows) if rows is not None else len(self.stream)

    @property
    def stream_deferred(self) -> bool:
        """Whether the stream is still rows (``defer_stream``): its ``Msg`` objects are built on its first read."""
        return self.__dict__.get("_pending_stream") is not None

    def first_user_messages(self, n: int) -> list[Msg]:
        """The stream's first ``n`` user messages, without building the other messages' ``Msg`` objects when the
        stream is still rows (``defer_stream``): at 25,000 calls building all 50,001 takes 0.15 s."""
        rows = self.__dict__.get("_pending_stream")
        if rows is None:
            return list(islice((m for m in self.stream if m.role == "user"), n))
        out: list[Msg] = []
        for row in rows:
            if len(out) >= n:
                break
            if isinstance(row[0], dict) and row[0].get("role") == "user":     # ``Msg.role`` is the role string
                out.append(Msg.from_parsed(*row))
        return out

    @property
    def models(self) -> list[str]:
        seen: dict[str, None] = {}
        for c in self.calls:
            if c.model:
                seen.setdefault(c.model, None)
        return list(seen)

    def message_by_id(self) -> dict[str, Msg]:
        table = {m.id: m for m in self.stream}
        table.update(self.policy_messages)
        return table

    def event_that_removed(self, msg_id: str) -> StreamEvent | None:
        for e in self.events:
            if msg_id in e.event.removed:
                return e
        return None
