"""Reading a Chain Studio trace file (docs/trace-format.md) into a ``Trace``.

The reader replays the file's events in order: bodies are defined once and
referred to by number, fields the writer left out are predicted with the same
``codec.Cursor`` rules the writer used, and every malformed line becomes a
``MalformedTraceError`` naming ``file:line:column``. A torn last line (a crash
mid-write) is skipped with a warning.
"""
from __future__ import annotations

import gc
import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from agent_core.core.errors import MalformedTraceError, UnsupportedTraceVersion
from agent_core.core.limits import number_too_long, read_input
from agent_core.core.msg import Msg, parse_timestamp

from . import _json_patch
from . import codec as _codec
from . import upgrades as _upgrades
from .codec import FORMAT_NAME, FORMAT_VERSION, single_null_message
from .events import CallAttempt, MemoryEvent
from .model import Call, StreamEvent, Trace
from .payload import Payload


def read_trace(path: str | Path) -> Trace:
    """Load a trace file; raises ``MalformedTraceError`` naming the line and column."""
    return parse_trace(read_bytes(Path(path)), str(path))


def read_bytes(path: Path) -> bytes:
    """The file's bytes through the one input gate (a regular file within the size limit)."""
    return read_input(path)


def parse_trace(data: bytes | str, source: str = "<trace>") -> Trace:
    """Parse trace text. A torn last line (a crash mid-write) is skipped with a warning."""
    with _gc_paused():
        events, warnings = parse_lines(data, source)
        reader = Reader(events, source)
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


def parse_lines(data: bytes | str, source: str) -> tuple[list[dict], list[str]]:
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
        except ValueError:          # an integer over Python's int-string limit
            raise number_too_long(line, source, number) from None
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise MalformedTraceError(source, "each line must be a JSON object with a \"type\"", number, 1)
        event["_line"] = number
        events.append(event)
    if not events or events[0].get("type") != "header" or events[0].get("format") != FORMAT_NAME:
        raise MalformedTraceError(source, f"not a {FORMAT_NAME} file (no header line)", 1, 1)
    version = events[0].get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise UnsupportedTraceVersion(source, "the header has no version number", 1, 1)
    if version < 1:
        raise UnsupportedTraceVersion(source, f"the header's version {version} is not a format version "
                                              f"(they count from 1 to {FORMAT_VERSION})", 1, 1)
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


class Reader:
    """Rebuilds a ``Trace`` from events, filling every left-out field from the ``Cursor`` as the writer did."""

    def __init__(self, events: list[dict], source: str):
        header = events[0]
        self.events = events
        self.source = source
        meta = header.get("meta")
        self.trace = Trace(source=source, format="chain-studio", meta=dict(meta) if isinstance(meta, dict) else {})
        if meta is not None and not isinstance(meta, dict):
            self.trace.warnings.append(f"line 1: the header's meta is {type(meta).__name__}, not an object; "
                                       "it was ignored")
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

    @property
    def call_numbers(self) -> list[int]:
        """Every call number in the file, in order of first appearance (after ``run``)."""
        return list(self._call_order)

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
            except (KeyError, TypeError, ValueError, IndexError, OverflowError) as err:
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
            request_sha256=_codec.sha256_hex(event["sha256"]) if "sha256" in event else None,
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
            replies = [cur.last_body] if single_null_message(response) else None
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



def _string_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _expect(event: dict, line: int, trace_source: str, types: dict[str, Any]) -> None:
    """Refuse an event whose fields have the wrong JSON type: input is untrusted, downstream code is not.

    ``types`` maps a field to the set of JSON value types it may hold (``json`` builds exact types, so
    ``type(value) in allowed`` is the check, and ``bool`` is never an ``int``), or to a predicate.
    """
    for key, value in event.items():
        allowed = types.get(key)
        if allowed is None or (type(value) in allowed if type(allowed) is frozenset else allowed(value)):
            continue
        raise MalformedTraceError(trace_source, f"{event['type']} event: {key!r} has the wrong type "
                                                f"({type(value).__name__})", line, 1)


_NULL = type(None)
_STR, _INT, _DICT = frozenset({str}), frozenset({int}), frozenset({dict})
_ADD_FIELDS = {"id": _STR, "ts": _STR, "dt": _INT, "parent_id": frozenset({str, _NULL}), "source": _STR, "body": _INT}
_MEMORY_FIELDS = {"policy": _STR, "reason": _STR, "params": _DICT, "after_add": _INT, "removed": _string_list,
                  "added": _string_list}
_CALL_FIELDS = {"call": _INT, "attempt": _INT, "after_add": _INT, "url": _STR, "purpose": _STR, "dt": _INT,
                "status": frozenset({int, _NULL}), "messages_ref": frozenset({list, _NULL}),
                "tools_body": frozenset({int, _NULL}), "request_body": _INT, "replies": frozenset({list, _NULL}),
                "response_patch": _DICT, "error": frozenset({str, _NULL}), "sha256": _STR}
