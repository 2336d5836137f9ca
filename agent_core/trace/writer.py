"""Writing the Chain Studio trace file: versioned JSONL, append-only, one event per line.

See docs/trace-format.md for the full specification. In short:

- ``header``: format name and version, first line.
- ``body``: a distinct body (message, tools list, request skeleton), numbered in order of
  definition; an ``add`` defines its body inline when it is new. Each distinct body is
  written once; everything else refers to it, so an N-call conversation costs O(N) bytes.
- ``add``: a message joined memory (id, parent_id, timestamp, body).
- ``trim`` / ``clear``: a memory event, with the removed ids and the reason.
- ``call``: one HTTP attempt; its request body is stored with ``messages``
  replaced by runs of add indices (``messages_ref``), its response with
  each choice's message replaced by a body number (``replies``) and
  stored as a patch against the previous response (``response_patch``).
- Any field the reader can predict from the lines before it is left out
  (``codec``): per-call metadata is what dominates a long trace.

Every event is one ``write`` plus ``flush``, so a reader (or a crash) sees
only whole events, except perhaps a torn last line, which is reported and
skipped.
"""
from __future__ import annotations

import bisect
import json
import os
import threading
from pathlib import Path
from typing import IO, Any, Iterable

from agent_core.core.errors import ChainStudioError
from agent_core.core.msg import Msg, format_timestamp, message_key, utc_now

from . import _json_patch
from . import codec as _codec
from .codec import FORMAT_NAME, FORMAT_VERSION, single_null_message
from .events import CallAttempt, MemoryEvent
from .model import Call, StreamEvent, Trace
from .reader import Reader, parse_lines, read_bytes

try:
    import fcntl
except ImportError:      # Windows: no advisory locks; one writer per file is then the user's care
    fcntl = None  # type: ignore[assignment]

REDACTED = "[REDACTED]"
"""What a secret (an API key) is replaced with before a line reaches the file."""


class TraceInUseError(ChainStudioError):
    """Another writer (a chat, a proxy) is recording into the same trace file."""


class TraceWriter:
    """A ``Recorder`` that appends every event to a trace file as it happens.

    A writer on an existing trace appends: its bodies, adds and predictions carry on, and
    ``first_call`` is the number its first new call must have (after the file's last call, so the
    reader never files the new calls as retries of the old ones). While a writer is open it holds
    an advisory lock on the file; a second writer on the same file gets ``TraceInUseError``
    instead of interleaving its lines.

    Args:
        path: the JSONL file; created with its header if new, appended to otherwise.
        meta: free-form metadata for the header (model, base URL host, policy).
        secrets: strings (API keys) that must never reach the file; any
            occurrence is replaced by ``[REDACTED]`` before a line is written.

    Raises:
        TraceInUseError: another writer holds the file.
        MalformedTraceError: the existing file is not a readable trace.
    """

    def __init__(self, path: str | Path, meta: dict | None = None, secrets: Iterable[str] = ()):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._secrets = [s for s in secrets if s]
        self._lock = threading.Lock()
        self._bodies: dict[str, int] = {}
        self._body_values: list[Any] = []        # by number: the base a new body may be a patch of
        self._by_identity: dict[int, tuple[Any, int]] = {}
        self._adds_by_body: dict[int, list[int]] = {}
        self._last_payload: tuple[list, list, int] | None = None
        """(messages, runs, last add index) of the previous payload, when extending it cannot change its runs."""
        self._last_url: str | None = None
        self._cursor = _codec.Cursor()
        self.first_call = 0
        """The number of this writer's first new call: 0 for a new file, one past the highest call of a
        resumed one."""
        self._file: IO[str] = open(self.path, "a", encoding="utf-8", errors="backslashreplace", newline="\n")
        try:
            self._lock_file()     # before reading: the file cannot change between the resume and the first line
            fresh = os.fstat(self._file.fileno()).st_size == 0
            if not fresh:
                self.first_call = self._resume()
        except BaseException:
            self._file.close()
            raise
        if fresh:
            self._write({"type": "header", "format": FORMAT_NAME, "version": FORMAT_VERSION,
                         "created": format_timestamp(utc_now()), "meta": meta or {}})

    def _lock_file(self) -> None:
        """Hold an exclusive advisory lock on the file until ``close`` (released by the OS on exit)."""
        if fcntl is None:
            return
        try:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise TraceInUseError(f"{self.path}: another chain-studio process is recording into this trace; "
                                  f"stop it or choose another file") from None
        except OSError:
            pass     # a file system without locks (some network mounts): record unlocked rather than not at all

    def _resume(self) -> int:
        """Continue from an existing file (``--trace`` on an old path): its bodies, adds and cursor.

        Returns the number the next new call gets (``first_call``).
        """
        data = read_bytes(self.path)
        reader = Reader(parse_lines(data, str(self.path))[0], str(self.path))
        reader.run()     # refuses to append to a file that is not a readable trace
        if not data.endswith(b"\n"):
            # A crash left a torn last line (the reader skipped it); appending to it would glue the
            # next event onto it and make the whole file unreadable, so it goes.
            with open(self.path, "r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)
        for number, value in enumerate(reader.bodies):
            self._bodies.setdefault(message_key(value), number)
        self._body_values = list(reader.bodies)
        for index, number in enumerate(reader.add_body_numbers):
            self._adds_by_body.setdefault(number, []).append(index)
        self._last_url = reader.last_url
        self._cursor = reader.cursor
        return max(reader.call_numbers, default=-1) + 1

    def add_secret(self, secret: str) -> None:
        if secret:
            self._secrets.append(secret)

    def _write(self, event: dict) -> None:
        line = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
        for secret in self._secrets:
            line = line.replace(secret, REDACTED)
        self._file.write(line + "\n")
        self._file.flush()

    def _intern(self, message: Any) -> tuple[int, dict | None]:
        """The body number of ``message``, and the fields defining it when it is new (else None)."""
        known = self._by_identity.get(id(message))
        if known is not None and known[0] is message:
            return known[1], None
        key = message_key(message)
        number = self._bodies.get(key)
        definition = None
        if number is None:
            number = len(self._body_values)     # not len(_bodies): a resumed file may define one body twice
            self._bodies[key] = number
            definition = self._definition(message, len(key.encode()))
            self._body_values.append(message)
            self._cursor.last_body = number
        if len(self._by_identity) < 1_000_000:
            # the same dict object sent again (an in-memory history) is not serialized again
            self._by_identity[id(message)] = (message, number)
        return number, definition

    def _definition(self, value: Any, size: int) -> dict:
        """``{"value": ...}``, or ``{"base": n, "patch": ...}`` when the body is a small edit of the last one
        (an assistant reply sent back with ``content`` null turned into ``""``)."""
        base = self._cursor.last_body
        if base is not None and type(value) is dict and type(self._body_values[base]) is dict:
            patch = _json_patch.diff(self._body_values[base], value)
            if patch and "" not in patch and len(json.dumps(patch, ensure_ascii=False)) * 2 < size:
                return {"patch": patch}      # of the body defined last (codec.Cursor.last_body)
        return {"value": value}

    def _body_number(self, message: Any) -> int:
        number, definition = self._intern(message)
        if definition is not None:
            self._write({"type": "body", "n": number, **definition})
        return number

    # Recorder interface -------------------------------------------------
    def message_added(self, msg: Msg, source: str = "memory") -> None:
        with self._lock:
            cur = self._cursor
            number, definition = self._intern(msg.to_openai())
            self._adds_by_body.setdefault(number, []).append(cur.add_count)
            cur.add_count += 1
            event: dict[str, Any] = {"type": "add"}
            if msg.id != _codec.next_id(cur.last_add_id):
                event["id"] = msg.id
            ms = _codec.epoch_ms(msg.timestamp)
            if cur.last_add_ms is None:
                event["ts"] = format_timestamp(msg.timestamp)
            elif ms != cur.last_add_ms:
                event["dt"] = ms - cur.last_add_ms
            if msg.parent_id != cur.last_add_id:     # the common case, a reply to the message before, costs nothing
                event["parent_id"] = msg.parent_id
            cur.last_add_id, cur.last_add_ms = msg.id, ms
            if source != "memory":
                event["source"] = source
            if definition is not None:
                event.update(definition)
            elif number != cur.last_body:
                event["body"] = number
            self._write(event)

    def memory_event(self, event: MemoryEvent) -> None:
        with self._lock:
            self._write(event.export())     # after_add: the stream adds so far, which the reader counts

    def call_attempt(self, attempt: CallAttempt) -> None:
        if attempt.call < self.first_call and attempt.attempt == 1:
            # numbering from 0 on a resumed file would file every new call as a retry of an old one
            raise ValueError(f"call {attempt.call} is already in {self.path.name}; a writer resumed on it "
                             f"numbers new calls from {self.first_call} (TraceWriter.first_call)")
        with self._lock:
            self._write(self._call_event(attempt))

    def _call_event(self, a: CallAttempt) -> dict:
        # Every field equal to its prediction is left out (see codec): per-call metadata,
        # not message bodies, is what dominates a long trace of short messages.
        cur = self._cursor
        event: dict[str, Any] = {"type": "call"}
        if a.call != cur.last_call + 1:
            event["call"] = a.call
        cur.last_call = a.call
        for key, value, default in (("attempt", a.attempt, 1), ("purpose", a.purpose, "chat"),
                                    ("method", a.method, "POST"), ("stream", a.stream, False)):
            if value != default:
                event[key] = value
        if a.url != self._last_url:
            event["url"] = self._last_url = a.url
        started = _codec.canonical_ms(a.started_at)
        if started is not None and cur.started_ms is not None:
            if started != cur.started_ms:
                event["dt"] = started - cur.started_ms
        elif a.started_at is not None or cur.started_ms is not None:
            event["started_at"] = a.started_at
        cur.started_ms = started
        if a.latency_ms is not None:
            event["latency_ms"] = round(a.latency_ms, 1)
        if a.status != 200:
            event["status"] = a.status
        self._request_fields(a.request_body, event)
        if a.request_sha256 is not None:
            event["sha256"] = _codec.sha256_field(a.request_sha256)
        self._response_fields(a.response_body, event)
        if a.error is not None:
            event["error"] = a.error
        return event

    def _request_fields(self, request: Any, event: dict) -> None:
        cur = self._cursor
        if not isinstance(request, dict):
            event["request"] = request
            return
        if isinstance(request.get("messages"), list):
            request = dict(request)
            runs = self._payload_ref(request["messages"])
            request["messages"] = None
            if runs != _codec.predicted_runs(cur):
                event["messages_ref"] = runs
            cur.runs, cur.runs_adds = runs, cur.add_count
            tools = None
            if isinstance(request.get("tools"), list):
                tools = self._body_number(request["tools"])
                request["tools"] = None
            if tools != cur.tools_body:
                event["tools_body"] = cur.tools_body = tools
        elif "messages" in request and request["messages"] is None:
            event["messages_ref"] = None      # a literal "messages": null, not a placeholder
        # model, temperature, ... are the same on every call: stored once like a message
        number = self._body_number(request)
        if number != cur.request_body:
            event["request_body"] = cur.request_body = number

    def _response_fields(self, response: Any, event: dict) -> None:
        choices = response.get("choices") if isinstance(response, dict) else None
        if isinstance(choices, list) and choices and all(isinstance(c, dict) and isinstance(c.get("message"), dict)
                                                         for c in choices):
            response = dict(response)
            response["choices"] = [dict(c) for c in choices]
            replies = [self._body_number(c["message"]) for c in response["choices"]]
            if replies != [self._cursor.last_body]:       # the usual reply: the body defined just now
                event["replies"] = replies
            for choice in response["choices"]:
                choice["message"] = None
        elif single_null_message(response):
            event["replies"] = None       # a literal "message": null, not a placeholder
        previous = self._cursor.last_response
        patch = _json_patch.diff(previous, response) if isinstance(previous, dict) and isinstance(response, dict) \
            else None
        if patch is not None and len(json.dumps(patch, ensure_ascii=False)) < len(json.dumps(response, ensure_ascii=False)):
            event["response_patch"] = patch      # only the leaves that changed since the previous response
        else:
            event["response"] = response
        self._cursor.last_response = response

    def _payload_ref(self, messages: list) -> list:
        """The payload as runs of add indices (``[start, count]``), or ``{"b": n}`` for a body never added.

        A payload is usually memory as it stood, i.e. a few runs of consecutive
        adds, so a call costs O(1) bytes however long the history is.
        """
        items: list = []
        previous = -1
        start = 0
        last = self._last_payload
        # A full-history payload extends the previous one: its runs are reused (a C-speed list comparison,
        # identity first), so a call costs O(new messages), not O(history), and a 25,000-call session stays linear.
        if last is not None and len(last[0]) <= len(messages) and messages[:len(last[0])] == last[0]:
            start = len(last[0])
            items = [list(r) for r in last[1]]
            previous = last[2]
        stable = True
        for message in messages[start:]:
            number = self._body_number(message)
            adds = self._adds_by_body.get(number)
            if not adds:
                items.append({"b": number})
                stable = False      # a later add of this body would change the reference
                continue
            k = bisect.bisect_right(adds, previous)
            if k >= len(adds):
                stable = False      # a later add of this body would change the reference
            index = adds[k] if k < len(adds) else adds[-1]   # reordered payloads point back
            if items and isinstance(items[-1], list) and items[-1][0] + items[-1][1] == index:
                items[-1][1] += 1
            else:
                items.append([index, 1])
            previous = index
        self._last_payload = (list(messages), [list(r) for r in items], previous) if stable else None
        return items

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()

    def __enter__(self) -> "TraceWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_trace(trace: Trace, path: str | Path) -> None:
    """Write any in-memory trace (recorded or imported) as a Chain Studio trace file."""
    path = Path(path)
    if path.exists():
        path.unlink()
    meta = {k: v for k, v in trace.meta.items() if not k.startswith("_")}
    with TraceWriter(path, meta={**meta, "imported_from": trace.format} if trace.format != "chain-studio" else meta) as w:
        adds_before: dict[int, list[StreamEvent]] = {}
        for e in trace.events:
            adds_before.setdefault(e.after_add, []).append(e)
        calls_at: dict[int, list[Call]] = {}
        for c in trace.calls:
            calls_at.setdefault(c.stream_index if c.stream_index is not None else len(trace.stream), []).append(c)
        for position in range(len(trace.stream) + 1):
            pending_calls = list(calls_at.get(position, []))
            for e in adds_before.get(position, []):
                # an event that came after some calls at this position stays after them
                while pending_calls and e.calls_before is not None and pending_calls[0].index < e.calls_before:
                    c = pending_calls.pop(0)
                    for a in (c.attempts or [_attempt_of(c)]):
                        w.call_attempt(a)
                for added_id in e.event.added:
                    if added_id in trace.policy_messages:
                        w.message_added(trace.policy_messages[added_id], source=e.event.policy)
                w.memory_event(e.event)
            for c in pending_calls:
                for a in (c.attempts or [_attempt_of(c)]):
                    w.call_attempt(a)
            if position < len(trace.stream):
                w.message_added(trace.stream[position])


def _attempt_of(call: Call) -> CallAttempt:
    return CallAttempt(call=call.index, attempt=1, method="POST", url="", request_body=call.request,
                       status=call.status, response_body=call.response, error=call.error,
                       latency_ms=call.latency_ms, started_at=call.started_at, stream=call.stream,
                       purpose=call.purpose)
