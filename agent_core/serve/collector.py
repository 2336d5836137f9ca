"""An OTLP/HTTP receiver that writes Chain Studio traces: ``chain-studio collect``.

Accepts ``POST /v1/traces`` and ``POST /v1/logs`` (OTLP protobuf or JSON, gzip or not) on 127.0.0.1 by
default. Each model call a span (and its log events) records is read by ``ingest/otel.py`` and appended to
the trace file of its conversation as it arrives (``TraceWriter``: the studio reads a file while it grows):
a recorded session id, else the trace id when a trace holds several calls, else the proxy's continuity rules
(``ingest/payload_log``). ``index.jsonl`` says where each call went and why.

The official instrumentation sends a call's span and its message log records in separate requests, in any
order: a span without content waits for its log records (and records wait for their span) up to ``grace``
seconds, then whatever arrived is written, with a note.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agent_core.core.errors import InputError
from agent_core.ingest import otel, otlp
from agent_core.ingest.otel_call import TelemetryCall, conversation_key, started_at, unrecorded_note
from agent_core.trace.events import CallAttempt
from agent_core.trace.writer import TraceWriter

from ._background import BackgroundServer
from .proxy_recorder import ProxyRecorder, _fresh_path, _safe_name

MAX_BODY_BYTES = 64 * 1024 * 1024


class _Recorder(ProxyRecorder):
    """The proxy's recorder (one file per conversation, ``index.jsonl``), with the collector's header."""

    def __init__(self, directory: Path):
        super().__init__(directory, upstream="")
        self.header: dict[str, Any] = {}

    def _writer(self, conversation: int, label: str | None) -> TraceWriter:
        writer = self._writers.get(conversation)
        if writer is None:
            stem = f"session-{_safe_name(label)}" if label else f"conversation-{len(self._writers) + 1:03d}"
            writer = TraceWriter(_fresh_path(self.directory, stem), meta={
                "recorded_by": "chain-studio collect", "conversation": conversation + 1, "session": label,
                **self.header})
            self._writers[conversation] = writer
            self._calls[conversation] = 0
        return writer


class _Waiting:
    """A span without its log events yet, or log events without their span."""

    def __init__(self, deadline: float):
        self.span: dict | None = None
        self.events: list[dict] = []
        self.deadline = deadline


class Collector:
    """Turns OTLP exports into trace files in ``directory`` (thread-safe; ``flush`` writes what waits)."""

    def __init__(self, directory: str | Path, grace: float = 2.0):
        self.directory = Path(directory)
        self.grace = grace
        self._recorder = _Recorder(self.directory)
        self._lock = threading.Lock()
        self._waiting: dict[str | None, _Waiting] = {}
        self.calls_written = 0
        self.warnings: list[str] = []

    def accept(self, kind: str, value: dict) -> None:
        """Take one decoded export (``otlp.decode``): write every call that is complete."""
        ready: list[TelemetryCall] = []
        now = time.monotonic()
        with self._lock:
            if kind == "logs":
                for span_id, records in otel.events_by_span(otlp.log_records(value)).items():
                    w = self._waiting.setdefault(span_id, _Waiting(now + self.grace))
                    w.events.extend(records)
                    w.deadline = max(w.deadline, now + self.grace)
            for span in otlp.spans(value) if kind == "traces" else []:
                w = self._waiting.pop(span.get("spanId"), None)
                events = w.events if w else []
                found = otel.span_call(span, events, self.warnings)
                if isinstance(found, TelemetryCall) and (found.convention != "gen_ai events" or _has_choice(events)):
                    ready.append(found)
                elif found == "not a model call":
                    continue
                else:       # no content yet, or the reply's event has not come: wait for the log records
                    w = w or _Waiting(now + self.grace)
                    w.span = span
                    self._waiting[span.get("spanId")] = w
            for span_id, w in list(self._waiting.items()):
                if w.span is not None and _has_choice(w.events):
                    del self._waiting[span_id]
                    found = otel.span_call(w.span, w.events, self.warnings)
                    if isinstance(found, TelemetryCall):
                        ready.append(found)
            self._write(ready)

    def flush(self, force: bool = False) -> int:
        """Write what has waited past its grace period (everything with ``force``); returns the calls written."""
        ready: list[TelemetryCall] = []
        now = time.monotonic()
        with self._lock:
            for span_id, w in list(self._waiting.items()):
                if not force and w.deadline > now:
                    continue
                del self._waiting[span_id]
                if w.span is not None:
                    found = otel.span_call(w.span, w.events, self.warnings)
                    if not isinstance(found, TelemetryCall):
                        self.warnings.append(f"span {w.span.get('name', '?')} ({span_id}) carries no message "
                                             "content and no log records came for it: enable content capture")
                        continue
                else:
                    found = otel.orphan_events_call(span_id, w.events, self.warnings)
                    if found is None:
                        continue
                ready.append(found)
            return self._write(ready)

    def _write(self, calls: list[TelemetryCall]) -> int:
        for call in sorted(calls, key=lambda c: c.start_ns):
            self._recorder.header = {"instrumentation": call.convention,
                                     **({"unrecorded": call.unrecorded} if call.unrecorded else {}),
                                     **({"tools_recorded": False} if "tools" in call.unrecorded else {}),
                                     **({"import_notes": _notes(call)} if not call.exact or call.unrecorded else {})}
            attempt = CallAttempt(call=0, attempt=1, method="POST", url="otlp:" + (call.convention or "span"),
                                  request_body=call.body, status=call.status, response_body=call.response,
                                  started_at=started_at(call.start_ns))
            self._recorder.record_chat(attempt, conversation_key(call), retry=False)
            self.calls_written += 1
        return len(calls)

    def trace_files(self) -> list[Path]:
        return self._recorder.trace_files()

    def close(self) -> None:
        self.flush(force=True)
        self._recorder.close()


def _notes(call: TelemetryCall) -> list[str]:
    """The header's notes: the first call's, plus what later calls of the same convention may need (the header
    is written once, before they arrive)."""
    notes = unrecorded_note([call], counted=False)
    if call.convention == "gen_ai events" and not any("tool_call_id" in n for n in notes):
        notes.append("Tool results recorded without their tool_call_id (Traceloop's events mode) are paired with "
                     "the tool calls before them by position: those ids are inferred")
    return notes


def _has_choice(events: list[dict]) -> bool:
    return any(otlp.event_name(r) == "gen_ai.choice" for r in events)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    def _reply(self, status: int, protobuf: bool, message: str | None = None) -> None:
        if protobuf:      # an empty Export*ServiceResponse; errors as a google.rpc.Status would need the protos
            data, ctype = b"", "application/x-protobuf"
        else:
            data = json.dumps({} if message is None else {"code": 3, "message": message}).encode()
            ctype = "application/json"
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        kind = {"/v1/traces": "traces", "/v1/logs": "logs"}.get(path)
        ctype = self.headers.get("Content-Type") or "application/json"
        protobuf = "protobuf" in ctype
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            self.close_connection = True
            self._reply(411, protobuf, "a Content-Length header (a number) is required")
            return
        if kind is None:
            self.rfile.read(length)
            self._reply(404, protobuf, f"unknown path {path}: OTLP/HTTP uses /v1/traces and /v1/logs")
            return
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            self._reply(413, protobuf, "the export is larger than 64 MB")
            return
        raw = self.rfile.read(length)
        try:
            value = otlp.decode(raw, kind=kind, content_type=ctype,
                                content_encoding=self.headers.get("Content-Encoding"))
            self.server.collector.accept(kind, value)
        except (InputError, RecursionError) as err:
            reason = str(err) if isinstance(err, InputError) else "the export is nested too deeply"
            self.server.note(f"refused a {kind} export: {reason}")
            self._reply(400, protobuf, reason)
            return
        except Exception as err:  # noqa: BLE001 - one bad export must not stop the receiver; say what failed
            self.server.note(f"could not record a {kind} export: {type(err).__name__}: {err}")
            self._reply(500, protobuf, f"could not record the export ({type(err).__name__})")
            return
        self._reply(200, protobuf)

    def do_GET(self) -> None:
        self._reply(404, False, "this is an OTLP/HTTP receiver: POST /v1/traces or /v1/logs")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], collector: Collector, verbose: bool):
        super().__init__(address, _Handler)
        self.collector = collector
        self.verbose = verbose
        self.notes: list[str] = []

    def note(self, text: str) -> None:
        self.notes.append(text)
        if self.verbose:
            print(f"chain-studio collect: {text}", flush=True)


class CollectorServer(BackgroundServer):
    """The receiver in a background thread (or the foreground, for the CLI), plus the flusher of late spans.

    Args:
        directory: where the trace files and ``index.jsonl`` go.
        port: 4318 is OTLP/HTTP's port; 0 picks a free one.
        host: 127.0.0.1 unless told otherwise (the exports hold whole conversations).
        grace: seconds a span waits for its log records (and records for their span).
    """

    thread_name = "otlp-collector"

    def __init__(self, directory: str | Path, port: int = 4318, host: str = "127.0.0.1", grace: float = 2.0,
                 verbose: bool = False):
        self.collector = Collector(directory, grace=grace)
        super().__init__(_Server((host, port), self.collector, verbose))
        self._stop = threading.Event()
        self._flusher = threading.Thread(target=self._flush_loop, name="otlp-collector-flush", daemon=True)
        self._flusher.start()

    @property
    def endpoint(self) -> str:
        """What to set ``OTEL_EXPORTER_OTLP_ENDPOINT`` to."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def notes(self) -> list[str]:
        return self._server.notes

    def _flush_loop(self) -> None:
        while not self._stop.wait(0.2):
            self.collector.flush()

    def stop(self) -> None:
        super().stop()
        self._stop.set()
        self.collector.close()


def run_collector(out: str | Path, port: int = 4318, host: str = "127.0.0.1", verbose: bool = False) -> int:
    """The ``chain-studio collect`` command: receive until Ctrl-C or SIGTERM, then write what waits and summarize."""
    import signal
    import sys

    try:
        server = CollectorServer(out, port=port, host=host, verbose=verbose)
    except OSError as err:
        raise InputError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    stop = threading.Event()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, lambda *_: stop.set())
    server.start()
    print(f"chain-studio collect: OTLP/HTTP on http://{host}:{server.port} (/v1/traces, /v1/logs; protobuf or JSON); "
          f"writing traces to {out}/ (Ctrl-C to stop)", flush=True)
    print(f"point your app at it: OTEL_EXPORTER_OTLP_ENDPOINT=http://{host}:{server.port}", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print(f"collected {server.collector.calls_written} call(s) in {len(server.collector.trace_files())} "
          f"conversation(s) in {out}", flush=True)
    for note in [*server.notes, *dict.fromkeys(server.collector.warnings)]:
        print(f"chain-studio collect: {note}", file=sys.stderr, flush=True)
    return 0
