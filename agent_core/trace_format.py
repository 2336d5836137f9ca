"""The Chain Studio trace file: versioned JSONL, append-only, one event per line.

See docs/trace-format.md for the full specification. In short:

- ``header``: format name and version, first line.
- ``body``: a distinct message body (or tools list), numbered ``n`` in order of first use.
  Each distinct body is written once; everything else refers to it, so an
  N-call conversation costs O(N) bytes, not O(N^2).
- ``add``: a message joined memory (id, parent_id, timestamp, body number).
- ``trim`` / ``clear``: a memory event, with the removed ids and the reason.
- ``call``: one HTTP attempt; its request body is stored with ``messages``
  replaced by runs of add indices (``messages_ref``), its response with
  each choice's message replaced by a body number (``reply_bodies``) and
  stored as a patch against the previous response (``response_patch``).

Every event is one ``write`` plus ``flush``, so a reader (or a crash) sees
only whole events, except perhaps a torn last line, which is reported and
skipped.
"""
from __future__ import annotations

import bisect
import json
import threading
from pathlib import Path
from typing import IO, Any, Iterable

from . import _json_patch, _upgrades
from .errors import MalformedTraceError, UnsupportedTraceVersion
from .limits import check_input_size
from .msg import Msg, format_timestamp, message_key, parse_timestamp, utc_now
from .recording import CallAttempt, MemoryEvent
from .trace import Call, StreamEvent, Trace

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
        self._by_identity: dict[int, tuple[Any, int]] = {}
        self._add_count = 0                       # every add, policy-made ones included
        self._adds_by_body: dict[int, list[int]] = {}
        self._stream_adds = 0                     # adds the program made (the stream)
        self._last_url: str | None = None
        self._last_add_id: str | None = None
        self._last_response: Any = None   # responses are stored as patches against this one
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        if not fresh:
            self._resume()
        self._file: IO[str] = open(self.path, "a", encoding="utf-8", newline="\n")
        if fresh:
            self._write({"type": "header", "format": FORMAT_NAME, "version": FORMAT_VERSION,
                         "created": format_timestamp(utc_now()), "meta": meta or {}})

    def _resume(self) -> None:
        """Continue numbering bodies and adds from an existing file (``--trace`` on an old path)."""
        read_trace(self.path)   # refuse to append to a file that is not a readable trace
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue    # a torn last line
                if event.get("type") == "body":
                    self._bodies[message_key(event["value"])] = event["n"]
                elif event.get("type") == "add":
                    self._adds_by_body.setdefault(event["body"], []).append(self._add_count)
                    self._add_count += 1
                    self._stream_adds += "source" not in event
                    self._last_add_id = event["id"]
                elif event.get("type") == "call" and "url" in event:
                    self._last_url = event["url"]

    def add_secret(self, secret: str) -> None:
        if secret:
            self._secrets.append(secret)

    def _write(self, event: dict) -> None:
        line = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
        for secret in self._secrets:
            line = line.replace(secret, REDACTED)
        self._file.write(line + "\n")
        self._file.flush()

    def _body_number(self, message: Any) -> int:
        known = self._by_identity.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        key = message_key(message)
        number = self._bodies.get(key)
        if number is None:
            number = len(self._bodies)
            self._bodies[key] = number
            self._write({"type": "body", "n": number, "value": message})
        if len(self._by_identity) < 1_000_000:
            # the same dict object sent again (an in-memory history) is not serialized again
            self._by_identity[id(message)] = (message, number)
        return number

    # Recorder interface -------------------------------------------------
    def message_added(self, msg: Msg, source: str = "memory") -> None:
        with self._lock:
            number = self._body_number(msg.to_openai())
            self._adds_by_body.setdefault(number, []).append(self._add_count)
            self._add_count += 1
            event = {"type": "add", "id": msg.id, "ts": format_timestamp(msg.timestamp), "body": number}
            if msg.parent_id != self._last_add_id:     # the common case, a reply to the message before, costs nothing
                event["parent_id"] = msg.parent_id
            self._last_add_id = msg.id
            if source != "memory":
                event["source"] = source
            else:
                self._stream_adds += 1
            self._write(event)

    def memory_event(self, event: MemoryEvent) -> None:
        with self._lock:
            self._write({**event.export(), "after_add": self._stream_adds})

    def call_attempt(self, attempt: CallAttempt) -> None:
        with self._lock:
            self._write(self._call_event(attempt))

    def _call_event(self, a: CallAttempt) -> dict:
        event: dict[str, Any] = {"type": "call", "call": a.call, "after_add": self._stream_adds}
        # Fields at their default value are left out, and the URL is written only when it
        # changes: per-call overhead is what dominates a long trace of short messages.
        for key, value, default in (("attempt", a.attempt, 1), ("purpose", a.purpose, "chat"),
                                    ("method", a.method, "POST"), ("stream", a.stream, False)):
            if value != default:
                event[key] = value
        if a.url != self._last_url:
            event["url"] = self._last_url = a.url
        event["started_at"] = a.started_at
        event["latency_ms"] = None if a.latency_ms is None else round(a.latency_ms, 1)
        event["status"] = a.status
        request = a.request_body
        if isinstance(request, dict) and isinstance(request.get("messages"), list):
            request = dict(request)
            event["messages_ref"] = self._payload_ref(request["messages"])
            request["messages"] = None
            if isinstance(request.get("tools"), list):
                event["tools_body"] = self._body_number(request["tools"])
                request["tools"] = None
        if isinstance(request, dict):
            # model, temperature, ... are the same on every call: stored once like a message
            event["request_body"] = self._body_number(request)
        else:
            event["request"] = request
        response = a.response_body
        choices = response.get("choices") if isinstance(response, dict) else None
        if isinstance(choices, list) and all(isinstance(c, dict) and isinstance(c.get("message"), dict)
                                             for c in choices):
            response = dict(response)
            response["choices"] = [dict(c) for c in choices]
            reply_bodies = {}
            for i, choice in enumerate(response["choices"]):
                reply_bodies[str(i)] = self._body_number(choice["message"])
                choice["message"] = None
            event["reply_bodies"] = reply_bodies
        previous = self._last_response
        patch = _json_patch.diff(previous, response) if isinstance(previous, dict) and isinstance(response, dict) \
            else None
        if patch is not None and len(json.dumps(patch, ensure_ascii=False)) < len(json.dumps(response, ensure_ascii=False)):
            event["response_patch"] = patch      # only the leaves that changed since the previous response
        else:
            event["response"] = response
        self._last_response = response
        if a.error is not None:
            event["error"] = a.error
        return event

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
    path = Path(path)
    try:
        check_input_size(path)
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise MalformedTraceError(str(path), err.strerror or str(err)) from None
    return parse_trace(data, str(path))


def parse_trace(data: bytes | str, source: str = "<trace>") -> Trace:
    """Parse trace text. A torn last line (a crash mid-write) is skipped with a warning."""
    text = data.decode("utf-8", errors="strict") if isinstance(data, bytes) else data
    lines = text.split("\n")
    torn_tail = not text.endswith("\n")
    events: list[dict] = []
    warnings: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
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
    header = events[0]
    version = header.get("version")
    if not isinstance(version, int):
        raise UnsupportedTraceVersion(source, "the header has no version number", 1, 1)
    if version > FORMAT_VERSION:
        raise UnsupportedTraceVersion(
            source, f"written by a newer Chain Studio (format version {version}; this one reads up to "
                    f"{FORMAT_VERSION}). Upgrade chain-studio to open it.", 1, 1)
    events = _upgrades.upgrade(events, version)
    trace = _build(events, source)
    trace.warnings[:0] = warnings
    return trace


def _build(events: list[dict], source: str) -> Trace:
    header = events[0]
    trace = Trace(source=source, format="chain-studio", meta=dict(header.get("meta") or {}))
    trace.meta["created"] = header.get("created")
    bodies: list[Any] = []
    add_ids: list[str] = []       # every add in file order: payloads refer to these indices
    add_bodies: list[Any] = []
    attempts_by_call: dict[int, list[tuple[CallAttempt, dict]]] = {}
    call_order: list[int] = []
    last_url = ""
    last_add_id: str | None = None
    last_response: Any = None     # response patches apply to the previous call event's response

    def body(n: Any, line: int) -> Any:
        if not isinstance(n, int) or not 0 <= n < len(bodies):
            raise MalformedTraceError(source, f"refers to message body {n!r}, which is not defined above", line, 1)
        return bodies[n]

    for event in events[1:]:
        kind, line = event["type"], event["_line"]
        try:
            if kind == "body":
                if event.get("n") != len(bodies):
                    raise MalformedTraceError(source, f"body numbers must count up from 0; expected {len(bodies)}",
                                              line, 1)
                bodies.append(event["value"])
            elif kind == "add":
                _expect(event, line, source, id=str, ts=str, parent_id=(str, type(None)), source=str)
                msg = Msg.from_openai(body(event["body"], line), id=event["id"],
                                      parent_id=event.get("parent_id", last_add_id),
                                      timestamp=parse_timestamp(event["ts"]), copy_values=False)
                last_add_id = msg.id
                if event.get("source", "memory") == "memory":
                    trace.stream.append(msg)
                else:
                    trace.policy_messages[msg.id] = msg
                add_ids.append(msg.id)
                add_bodies.append(bodies[event["body"]])
            elif kind in ("trim", "clear"):
                _expect(event, line, source, policy=str, reason=str, params=dict, after_add=int,
                        removed=_string_list, added=_string_list)
                mem = MemoryEvent(type=kind, policy=event.get("policy", kind), removed=list(event.get("removed", [])),
                                  reason=event.get("reason", ""), params=dict(event.get("params") or {}),
                                  added=list(event.get("added", [])))
                trace.events.append(StreamEvent(after_add=int(event.get("after_add", len(trace.stream))), event=mem,
                                                calls_before=len(call_order)))
            elif kind == "call":
                _expect(event, line, source, call=int, attempt=int, after_add=int, url=str, purpose=str,
                        status=(int, type(None)), messages_ref=list, error=(str, type(None)))
                last_url = event.get("url", last_url)
                if "response_patch" in event:
                    if not isinstance(last_response, dict):
                        raise MalformedTraceError(source, "a response patch with no response before it", line, 1)
                    event["response"] = _json_patch.apply(last_response, event["response_patch"])
                last_response = event.get("response")
                attempt, request = _attempt_from_event(event, body, line, last_url, add_ids, add_bodies)
                if attempt.call not in attempts_by_call:
                    attempts_by_call[attempt.call] = []
                    call_order.append(attempt.call)
                attempts_by_call[attempt.call].append((attempt, event))
            else:
                trace.warnings.append(f"line {line}: unknown event type {kind!r} skipped")
        except MalformedTraceError as err:
            if err.path:
                raise
            raise MalformedTraceError(source, err.reason, err.line, err.column) from None
        except (KeyError, TypeError, ValueError) as err:
            raise MalformedTraceError(source, f"malformed {kind} event ({type(err).__name__}: {err})", line, 1) from None

    for position, call_number in enumerate(call_order):
        attempts = [a for a, _ in attempts_by_call[call_number]]
        last, event = attempts_by_call[call_number][-1]
        trace.calls.append(Call(
            index=position, request=last.request_body if isinstance(last.request_body, dict) else {},
            response=last.response_body if isinstance(last.response_body, dict) else None,
            status=last.status, error=last.error, latency_ms=last.latency_ms, started_at=last.started_at,
            stream=last.stream, purpose=last.purpose, stream_index=int(event.get("after_add", 0)),
            message_ids=last.message_ids or [], attempts=attempts,
        ))
    return trace


def _string_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _expect(event: dict, line: int, trace_source: str, **types: Any) -> None:
    """Refuse an event whose fields have the wrong JSON type: input is untrusted, downstream code is not."""
    for key, expected in types.items():
        if key not in event:
            continue
        value = event[key]
        ok = expected(value) if callable(expected) and not isinstance(expected, type) else (
            isinstance(value, expected) and not (expected is int and isinstance(value, bool)))
        if not ok:
            raise MalformedTraceError(trace_source, f"{event['type']} event: {key!r} has the wrong type "
                                              f"({type(value).__name__})", line, 1)


def _attempt_from_event(event: dict, body, line: int, url: str, add_ids: list[str],
                        add_bodies: list[Any]) -> tuple[CallAttempt, dict]:
    request = body(event["request_body"], line) if "request_body" in event else event.get("request")
    message_ids: list[str | None] = []
    if "messages_runs" in event:
        raise MalformedTraceError("", "this call uses the pre-release messages_runs encoding, which this "
                                      "Chain Studio no longer reads; record the trace again", line, 1)
    if "messages_ref" in event and isinstance(request, dict):
        request = dict(request)
        messages: list[Any] = []
        for item in event["messages_ref"]:
            if isinstance(item, dict):
                messages.append(body(item.get("b"), line))
                message_ids.append(None)
                continue
            start, count = item
            if not (isinstance(start, int) and isinstance(count, int) and 0 <= start and start + count <= len(add_ids)):
                raise MalformedTraceError("", f"refers to messages {start}..{start + count - 1}, "
                                              f"but only {len(add_ids)} were added above", line, 1)
            messages.extend(add_bodies[start:start + count])
            message_ids.extend(add_ids[start:start + count])
        request["messages"] = messages
        if "tools_body" in event:
            request["tools"] = body(event["tools_body"], line)
    response = event.get("response")
    if "reply_bodies" in event and isinstance(response, dict):
        response = dict(response)
        choices = [dict(c) for c in response.get("choices", [])]
        for index, n in event["reply_bodies"].items():
            choices[int(index)]["message"] = body(n, line)
        response["choices"] = choices
    attempt = CallAttempt(
        call=int(event["call"]), attempt=int(event.get("attempt", 1)), method=event.get("method", "POST"),
        url=url, request_body=request, status=event.get("status"), response_body=response,
        error=event.get("error"), latency_ms=event.get("latency_ms"), started_at=event.get("started_at"),
        stream=bool(event.get("stream")), purpose=event.get("purpose", "chat"), message_ids=message_ids,
    )
    return attempt, request


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
