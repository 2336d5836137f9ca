"""The Chain Studio trace file: versioned JSONL, append-only, one event per line.

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
  (``_trace_codec``): per-call metadata is what dominates a long trace.

Every event is one ``write`` plus ``flush``, so a reader (or a crash) sees
only whole events, except perhaps a torn last line, which is reported and
skipped.
"""
from __future__ import annotations

import bisect
import gc
import json
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterable, Iterator

from agent_core.core.errors import MalformedTraceError, UnsupportedTraceVersion
from agent_core.core.limits import check_input_size
from agent_core.core.msg import (
    Msg,
    format_timestamp,
    message_key,
    parse_timestamp,
    utc_now,
)
from agent_core.trace import _json_patch
from agent_core.trace import codec as _codec
from agent_core.trace import upgrades as _upgrades

from .model import Call, StreamEvent, Trace
from .payload import Payload
from .recorder import CallAttempt, MemoryEvent

FORMAT_NAME = "chain-studio-trace"
FORMAT_VERSION = _upgrades.CURRENT_VERSION
REDACTED = "[REDACTED]"


class TraceWriter:
    """A ``Recorder`` that appends every event to a trace file as it happens.

    Args:
        path: the JSONL file; created with its header if new, appended to otherwise.
        meta: free-form metadata for the header (model, base URL host, policy).
        secrets: strings (API keys) that must never reach the file; any
            occurrence is replaced by ``[REDACTED]`` before a line is written.
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
        self._stream_adds = 0                     # adds the program made (the stream)
        self._last_url: str | None = None
        self._cursor = _codec.Cursor()
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        if not fresh:
            self._resume()
        self._file: IO[str] = open(self.path, "a", encoding="utf-8", newline="\n")
        if fresh:
            self._write({"type": "header", "format": FORMAT_NAME, "version": FORMAT_VERSION,
                         "created": format_timestamp(utc_now()), "meta": meta or {}})

    def _resume(self) -> None:
        """Continue from an existing file (``--trace`` on an old path): its bodies, adds and cursor."""
        data = _read_bytes(self.path)
        reader = _Reader(_parse_lines(data, str(self.path))[0], str(self.path))
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
        self._stream_adds = len(reader.stream_rows)
        self._last_url = reader.last_url
        self._cursor = reader.cursor

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
            number = len(self._bodies)
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
                return {"patch": patch}      # of the body defined last (_trace_codec.Cursor.last_body)
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
            else:
                self._stream_adds += 1
            if definition is not None:
                event.update(definition)
            elif number != cur.last_body:
                event["body"] = number
            self._write(event)

    def memory_event(self, event: MemoryEvent) -> None:
        with self._lock:
            self._write(event.export())     # after_add: the stream adds so far, which the reader counts

    def call_attempt(self, attempt: CallAttempt) -> None:
        with self._lock:
            self._write(self._call_event(attempt))

    def _call_event(self, a: CallAttempt) -> dict:
        # Every field equal to its prediction is left out (see _trace_codec): per-call metadata,
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
        elif _single_null_message(response):
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
        for message in messages:
            number = self._body_number(message)
            adds = self._adds_by_body.get(number)
            if not adds:
                items.append({"b": number})
                continue
            k = bisect.bisect_right(adds, previous)
            index = adds[k] if k < len(adds) else adds[-1]   # reordered payloads point back
            if items and isinstance(items[-1], list) and items[-1][0] + items[-1][1] == index:
                items[-1][1] += 1
            else:
                items.append([index, 1])
            previous = index
        return items

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()

    def __enter__(self) -> "TraceWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_trace(path: str | Path) -> Trace:
    """Load a trace file; raises ``MalformedTraceError`` naming the line and column."""
    return parse_trace(_read_bytes(Path(path)), str(path))


def _read_bytes(path: Path) -> bytes:
    try:
        check_input_size(path)
        with open(path, "rb") as f:
            return f.read()
    except OSError as err:
        raise MalformedTraceError(str(path), err.strerror or str(err)) from None


def parse_trace(data: bytes | str, source: str = "<trace>") -> Trace:
    """Parse trace text. A torn last line (a crash mid-write) is skipped with a warning."""
    with _gc_paused():
        events, warnings = _parse_lines(data, source)
        reader = _Reader(events, source)
        reader.run()
    reader.trace.warnings[:0] = warnings
    return reader.trace


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a trace is built.

    The reader makes hundreds of thousands of small acyclic objects. Each
    collection they trigger walks the whole growing trace again, which made up
    a third to half of the load time at 5,000 calls.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _parse_lines(data: bytes | str, source: str) -> tuple[list[dict], list[str]]:
    """JSON events of the current version, each tagged with its line number, and the warnings."""
    text = data.decode("utf-8", errors="strict") if isinstance(data, bytes) else data
    lines = text.split("\n")
    torn_tail = not text.endswith("\n")
    events: list[dict] = []
    warnings: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line or line.isspace():
            continue
        try:
            event = _parse_line(line)
        except json.JSONDecodeError as err:
            if number == len(lines) and torn_tail:
                warnings.append(f"line {number} is incomplete (the writer stopped mid-line) and was skipped")
                break
            raise MalformedTraceError(source, f"invalid JSON: {err.msg}", number, err.colno) from None
        except RecursionError:
            raise MalformedTraceError(source, "JSON nested too deeply", number, 1) from None
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise MalformedTraceError(source, "each line must be a JSON object with a \"type\"", number, 1)
        event["_line"] = number
        events.append(event)
    if not events or events[0].get("type") != "header" or events[0].get("format") != FORMAT_NAME:
        raise MalformedTraceError(source, f"not a {FORMAT_NAME} file (no header line)", 1, 1)
    version = events[0].get("version")
    if not isinstance(version, int):
        raise UnsupportedTraceVersion(source, "the header has no version number", 1, 1)
    if version > FORMAT_VERSION:
        raise UnsupportedTraceVersion(
            source, f"written by a newer Chain Studio (format version {version}; this one reads up to "
                    f"{FORMAT_VERSION}). Upgrade chain-studio to open it.", 1, 1)
    return _upgrades.upgrade(events, version), warnings


_scan_json = json.JSONDecoder().scan_once


def _parse_line(line: str) -> Any:
    """``json.loads(line)``; a line as the writer writes it goes straight to the C scanner, which
    skips json.loads' two Python-level wrappers (a third of parsing a trace of short lines)."""
    try:
        value, end = _scan_json(line, 0)
    except StopIteration:
        end = -1
    if end == len(line):
        return value
    return json.loads(line)    # whitespace around it, trailing text, or invalid: json's own rules and errors


class _Reader:
    """Rebuilds a ``Trace`` from events, filling every left-out field from the ``Cursor`` as the writer did."""

    def __init__(self, events: list[dict], source: str):
        header = events[0]
        self.events = events
        self.source = source
        self.trace = Trace(source=source, format="chain-studio", meta=dict(header.get("meta") or {}))
        self.trace.meta["created"] = header.get("created")
        self.cursor = _codec.Cursor()
        self.bodies: list[Any] = []
        self.stream_rows: list[tuple] = []       # Msg.from_parsed arguments of each stream add
        self.add_body_numbers: list[int] = []    # every add in file order: payloads refer to these indices
        self.add_ids: list[str] = []
        self.add_bodies: list[Any] = []
        self.last_url = ""
        self._last_payload: Payload | None = None     # the payload a predicted messages_ref extends
        self._attempts_by_call: dict[int, list[tuple[CallAttempt, int]]] = {}
        self._call_order: list[int] = []

    def run(self) -> None:
        handlers = {"body": self._body_event, "add": self._add, "trim": self._memory_event,
                    "clear": self._memory_event, "call": self._call}
        for event in self.events[1:]:
            kind, line = event["type"], event["_line"]
            handler = handlers.get(kind)
            if handler is None:
                self.trace.warnings.append(f"line {line}: unknown event type {kind!r} skipped")
                continue
            try:
                handler(event, line)
            except MalformedTraceError as err:
                if err.path:
                    raise
                raise MalformedTraceError(self.source, err.reason, err.line or line, err.column or 1) from None
            except (KeyError, TypeError, ValueError, IndexError) as err:
                raise MalformedTraceError(self.source, f"malformed {kind} event ({type(err).__name__}: {err})",
                                          line, 1) from None
        self._finish_calls()
        self.trace.defer_stream(self.stream_rows)

    def _error(self, reason: str, line: int) -> MalformedTraceError:
        return MalformedTraceError(self.source, reason, line, 1)

    def body(self, n: Any, line: int) -> Any:
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n < len(self.bodies):
            raise self._error(f"refers to message body {n!r}, which is not defined above", line)
        return self.bodies[n]

    def _define(self, event: dict, line: int) -> int:
        """A new body from ``value``, or a ``patch`` of the last body defined; returns its number."""
        if "value" in event:
            value = event["value"]
        elif isinstance(event.get("patch"), dict):
            value = _json_patch.apply(self.body(self.cursor.last_body, line), event["patch"])
        else:
            raise self._error("a body needs a \"value\" or a \"patch\"", line)
        self.bodies.append(value)
        self.cursor.last_body = len(self.bodies) - 1
        return len(self.bodies) - 1

    def _body_event(self, event: dict, line: int) -> None:
        if event.get("n") != len(self.bodies):
            raise self._error(f"body numbers must count up from 0; expected {len(self.bodies)}", line)
        self._define(event, line)

    def _add(self, event: dict, line: int) -> None:
        _expect(event, line, self.source, _ADD_FIELDS)
        cur = self.cursor
        if "value" in event or "patch" in event:
            number = self._define(event, line)
        else:
            number = event.get("body", cur.last_body)
        msg_id = event["id"] if "id" in event else _codec.next_id(cur.last_add_id)
        if msg_id is None:
            raise self._error("the first add needs an \"id\"", line)
        if "ts" in event:
            timestamp = parse_timestamp(event["ts"])
            ms = _codec.epoch_ms(timestamp)
        elif cur.last_add_ms is not None:
            ms = cur.last_add_ms + event.get("dt", 0)
            timestamp = _codec.from_epoch_ms(ms)
        else:
            raise self._error("the first add needs a \"ts\"", line)
        body = self.body(number, line)
        if not isinstance(body, dict):
            raise self._error(f"a message must be a JSON object, got {type(body).__name__}", line)
        row = (body, msg_id, event.get("parent_id", cur.last_add_id), timestamp)
        cur.last_add_id, cur.last_add_ms = msg_id, ms
        cur.add_count += 1
        if event.get("source", "memory") == "memory":
            self.stream_rows.append(row)     # Msg objects are built when the stream is first read
        else:
            self.trace.policy_messages[msg_id] = Msg.from_parsed(*row)
        self.add_body_numbers.append(number)
        self.add_ids.append(msg_id)
        self.add_bodies.append(self.bodies[number])

    def _memory_event(self, event: dict, line: int) -> None:
        _expect(event, line, self.source, _MEMORY_FIELDS)
        kind = event["type"]
        mem = MemoryEvent(type=kind, policy=event.get("policy", kind), removed=list(event.get("removed", [])),
                          reason=event.get("reason", ""), params=dict(event.get("params") or {}),
                          added=list(event.get("added", [])))
        self.trace.events.append(StreamEvent(after_add=event.get("after_add", len(self.stream_rows)), event=mem,
                                             calls_before=len(self._call_order)))

    def _call(self, event: dict, line: int) -> None:
        _expect(event, line, self.source, _CALL_FIELDS)
        if "messages_runs" in event or "reply_bodies" in event:
            raise self._error("this call uses a pre-release encoding, which this Chain Studio no longer reads; "
                              "record the trace again", line)
        cur = self.cursor
        self.last_url = event.get("url", self.last_url)
        number = event.get("call", cur.last_call + 1)
        cur.last_call = number
        if "started_at" in event:
            started_at = event["started_at"]
            cur.started_ms = _codec.canonical_ms(started_at)
        elif cur.started_ms is not None:
            cur.started_ms += event.get("dt", 0)
            started_at = _codec.format_ms(cur.started_ms)
        else:
            started_at = None
        request, payload = self._request(event, line)
        attempt = CallAttempt(
            call=number, attempt=event.get("attempt", 1), method=event.get("method", "POST"),
            url=self.last_url, request_body=request, status=event.get("status", 200),
            response_body=self._response(event, line), error=event.get("error"), latency_ms=event.get("latency_ms"),
            started_at=started_at, stream=bool(event.get("stream")), purpose=event.get("purpose", "chat"),
        )
        attempt.payload = payload
        if number not in self._attempts_by_call:
            self._attempts_by_call[number] = []
            self._call_order.append(number)
        self._attempts_by_call[number].append((attempt, request, event.get("after_add", len(self.stream_rows))))

    def _request(self, event: dict, line: int) -> tuple[Any, Payload | None]:
        """The request as stored (a skeleton when it has a payload) and its payload."""
        cur = self.cursor
        if "request" in event:
            return event["request"], None
        if "request_body" in event:
            cur.request_body = event["request_body"]
        if cur.request_body is None:
            raise self._error("a call event needs a \"request_body\" (or \"request\")", line)
        request = self.body(cur.request_body, line)
        placeholder = isinstance(request, dict) and "messages" in request and request["messages"] is None
        predicted = placeholder and "messages_ref" not in event
        runs = None if not placeholder else _codec.predicted_runs(cur) if predicted else event["messages_ref"]
        if runs is None:
            return request, None
        parts: list = []
        for item in runs:
            if isinstance(item, dict):
                parts.append([self.body(item.get("b"), line)])
                continue
            start, count = item
            if not (isinstance(start, int) and isinstance(count, int) and 0 <= start and 0 <= count and
                    start + count <= len(self.add_ids)):
                raise self._error(f"refers to messages {start}..{start + count - 1}, "
                                  f"but only {len(self.add_ids)} were added above", line)
            parts.append((start, count))
        cur.runs, cur.runs_adds = runs, cur.add_count
        if "tools_body" in event:
            cur.tools_body = event["tools_body"]
        tools = None
        if cur.tools_body is not None and "tools" in request and request["tools"] is None:
            tools = self.body(cur.tools_body, line)
        payload = Payload(parts, self.add_bodies, self.add_ids, tools, self._last_payload if predicted else None)
        self._last_payload = payload
        return request, payload

    def _response(self, event: dict, line: int) -> Any:
        cur = self.cursor
        if "response_patch" in event:
            if not isinstance(cur.last_response, dict):
                raise self._error("a response patch with no response before it", line)
            response = _json_patch.apply(cur.last_response, event["response_patch"])
        else:
            response = event.get("response")
        cur.last_response = response
        if "replies" in event:
            replies = event["replies"]
        else:
            replies = [cur.last_body] if _single_null_message(response) else None
        if replies is not None and isinstance(response, dict) and isinstance(response.get("choices"), list):
            response = dict(response)
            choices = [dict(c) for c in response["choices"]]
            if len(replies) != len(choices):
                raise self._error(f"{len(replies)} replies for {len(choices)} choices", line)
            for choice, n in zip(choices, replies):
                choice["message"] = self.body(n, line)
            response["choices"] = choices
        return response

    def _finish_calls(self) -> None:
        for position, call_number in enumerate(self._call_order):
            attempts = [a for a, _, _ in self._attempts_by_call[call_number]]
            last, request, after_add = self._attempts_by_call[call_number][-1]
            call = Call(
                index=position, request=request if isinstance(request, dict) else {},
                response=last.response_body if isinstance(last.response_body, dict) else None,
                status=last.status, error=last.error, latency_ms=last.latency_ms, started_at=last.started_at,
                stream=last.stream, purpose=last.purpose, stream_index=after_add, attempts=attempts,
            )
            call.payload = last.payload
            self.trace.calls.append(call)


def _single_null_message(response: Any) -> bool:
    """One choice whose message is null: where a left-out ``replies`` means the body defined last."""
    choices = response.get("choices") if isinstance(response, dict) else None
    return (isinstance(choices, list) and len(choices) == 1 and isinstance(choices[0], dict)
            and "message" in choices[0] and choices[0]["message"] is None)


def _string_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _expect(event: dict, line: int, trace_source: str, types: dict[str, Any]) -> None:
    """Refuse an event whose fields have the wrong JSON type: input is untrusted, downstream code is not."""
    for key, value in event.items():
        expected = types.get(key)
        if expected is None:
            continue
        ok = expected(value) if callable(expected) and not isinstance(expected, type) else (
            isinstance(value, expected) and not (expected is int and isinstance(value, bool)))
        if not ok:
            raise MalformedTraceError(trace_source, f"{event['type']} event: {key!r} has the wrong type "
                                              f"({type(value).__name__})", line, 1)


_NULL = type(None)
_ADD_FIELDS = {"id": str, "ts": str, "dt": int, "parent_id": (str, _NULL), "source": str, "body": int}
_MEMORY_FIELDS = {"policy": str, "reason": str, "params": dict, "after_add": int, "removed": _string_list,
                  "added": _string_list}
_CALL_FIELDS = {"call": int, "attempt": int, "after_add": int, "url": str, "purpose": str, "dt": int,
                "status": (int, _NULL), "messages_ref": (list, _NULL), "tools_body": (int, _NULL),
                "request_body": int, "replies": (list, _NULL), "response_patch": dict, "error": (str, _NULL)}


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
