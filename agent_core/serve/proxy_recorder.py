"""Where the recording proxy writes: one trace file per conversation, ``other.jsonl`` and ``index.jsonl``.

``serve/proxy.py`` moves the bytes; this module places each exchange in its
conversation (``ingest/payload_log.LineageBuilder``), writes it, and logs in
``index.jsonl`` where it went and why.
"""
from __future__ import annotations

import json
import re
import threading
import zlib
from pathlib import Path
from urllib.parse import urlsplit

from agent_core.ingest.payload_log import LineageBuilder, LineageStep
from agent_core.trace.events import CallAttempt
from agent_core.trace.writer import REDACTED, TraceWriter

from .proxy_responses import ResponsesLineage


_SECRET = re.compile(r"(?i)(?:^|[^a-z0-9])(?:sk|pk|rk|ak|key|token|secret|bearer|ghp|xox[a-z])[-_ ]|"
                     r"[A-Za-z0-9+/_=-]{32,}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
"""A UUID (the usual session id of OpenInference's ``using_session``, chat UIs): no provider's key has this form."""


def looks_like_secret(label: str) -> bool:
    """A session label that looks like an API key or token (``sk-...``, ``Bearer ...``, 32+ key characters):
    it must not become part of a file name, nor be written anywhere."""
    return bool(_SECRET.search(label)) and not _UUID.fullmatch(label)


def _safe_name(label: str) -> str:
    """A file-name-safe form of a session label: what is not ``[A-Za-z0-9._-]`` becomes ``-``, at most 60
    characters, and a digest of the label when anything was changed. A key-looking label gives the digest
    alone, so no part of a key lands in a name."""
    if looks_like_secret(label):
        return f"redacted-{zlib.crc32(label.encode('utf-8', 'backslashreplace')) & 0xffffffff:08x}"
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-.")[:60]
    if name != label:
        name = f"{name or 'session'}-{zlib.crc32(label.encode('utf-8', 'backslashreplace')) & 0xffffffff:08x}"
    return name


class ProxyRecorder:
    """Writes exchanges as traces: one file per conversation, plus ``other.jsonl`` and ``index.jsonl``."""

    def __init__(self, directory: str | Path, upstream: str, observers: tuple = ()):
        self.observers = observers
        """Objects told of each chat exchange once placed: ``conversation_call(key, label, attempt, secrets)``
        (the live OTLP exporter of ``proxy --otlp-endpoint``); a failing observer costs no recording."""
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.upstream_host = urlsplit(upstream).netloc
        self._lock = threading.Lock()
        self._builder = LineageBuilder()
        self._writers: dict[int, TraceWriter] = {}
        self._calls: dict[int, int] = {}           # conversation -> logical calls written
        self._call_of: dict[int, tuple[int, int]] = {}   # builder input index -> (call number, attempts)
        self._other: TraceWriter | None = None
        self._other_calls = 0
        self._unlabelled = 0
        self._secrets: list[str] = []
        self._exchanges = 0
        self._responses = ResponsesLineage()          # Responses API exchanges: their own conversations
        self._resp_writers: dict[int, TraceWriter] = {}
        self._resp_calls: dict[int, int] = {}
        self._index = open(self.directory / "index.jsonl", "a", encoding="utf-8", newline="\n")

    def _redact(self, text: str) -> str:
        for s in self._secrets:
            text = text.replace(s, REDACTED)
        return text

    def add_secrets(self, secrets: list[str]) -> None:
        with self._lock:
            for s in sorted(secrets, key=len, reverse=True):
                if s and s not in self._secrets:
                    self._secrets.append(s)
                    self._secrets.sort(key=len, reverse=True)   # longest first: "Bearer x" before "x"
                    for w in [*self._writers.values(), *self._resp_writers.values(),
                              *([self._other] if self._other else [])]:
                        w.add_secret(s)

    def _writer(self, conversation: int, label: str | None) -> TraceWriter:
        writer = self._writers.get(conversation)
        if writer is None:
            if label is not None:
                name = f"session-{_safe_name(label)}"
            else:
                self._unlabelled += 1
                while (self.directory / f"conversation-{self._unlabelled:03d}.jsonl").exists():
                    self._unlabelled += 1      # an earlier run's: numbering goes on after it
                name = f"conversation-{self._unlabelled:03d}"
            path = _fresh_path(self.directory, name)
            writer = TraceWriter(path, secrets=list(self._secrets), meta={
                "recorded_by": "chain-studio proxy", "upstream": self.upstream_host,
                "conversation": conversation + 1, "session": label})
            self._writers[conversation] = writer
            self._calls[conversation] = 0
        return writer

    def _log(self, entry: dict) -> None:
        self._index.write(self._redact(json.dumps(entry, ensure_ascii=False, separators=(",", ":"))) + "\n")
        self._index.flush()

    def record_chat(self, attempt: CallAttempt, session: str | None, retry: bool) -> dict:
        """Place a chat completions exchange in its conversation and write it; returns the index entry."""
        with self._lock:
            seen_warnings = len(self._builder.result.warnings)
            step: LineageStep = self._builder.observe(
                attempt.request_body, attempt.response_body, status=attempt.status, error=attempt.error,
                session=session, retry=retry, started_at=attempt.started_at)
            lin = step.lineage
            conv = lin.conversation
            writer = self._writer(conv, self._builder.result.labels[conv])
            for op in step.ops:
                _apply(writer, op)
            if lin.retry_of is not None and lin.retry_of in self._call_of:
                number, attempts = self._call_of[lin.retry_of]
            else:
                number, attempts = self._calls[conv], 0
                self._calls[conv] += 1
            self._call_of[lin.call] = (number, attempts + 1)
            if lin.retry_of is not None:
                self._call_of[lin.retry_of] = (number, attempts + 1)
            attempt.call, attempt.attempt = number, attempts + 1
            attempt.message_ids = [i for i in lin.message_ids if i]
            writer.call_attempt(attempt)
            entry = self._entry(attempt, writer.path.name, session)
            entry["conversation"], entry["reason"] = conv + 1, lin.reason
            notes = self._builder.result.warnings[seen_warnings:]
            if notes:
                entry["lineage_warnings"] = notes      # an ambiguous choice; what has no place in the stream
            self._log(entry)
            label = self._builder.result.labels[conv]
            for observer in self.observers:
                try:
                    observer.conversation_call(str(conv + 1), label, attempt, list(self._secrets))
                except Exception as err:  # noqa: BLE001 -- an exporter's failure must not lose the recording
                    entry.setdefault("observer_errors", []).append(f"{type(err).__name__}: {err}")
            return entry

    def record_responses(self, attempt: CallAttempt, session: str | None) -> dict:
        """Place a Responses API exchange in its conversation (``proxy_responses.py``) and write it."""
        with self._lock:
            place = self._responses.place(attempt.request_body, attempt.response_body, session)
            writer = self._resp_writers.get(place.conversation)
            if writer is None:
                stem = f"session-{_safe_name(place.label)}-responses" if place.label is not None else \
                    f"responses-{place.conversation + 1:03d}"
                writer = self._resp_writers[place.conversation] = TraceWriter(
                    _fresh_path(self.directory, stem), secrets=list(self._secrets), meta={
                        "recorded_by": "chain-studio proxy", "upstream": self.upstream_host, "api": "responses",
                        "conversation": place.conversation + 1, "session": place.label})
                self._resp_calls[place.conversation] = 0
            attempt.call = self._resp_calls[place.conversation]
            self._resp_calls[place.conversation] += 1
            writer.call_attempt(attempt)
            entry = self._entry(attempt, writer.path.name, session)
            entry["conversation"], entry["reason"] = place.conversation + 1, place.reason
            self._log(entry)
            return entry

    def record_other(self, attempt: CallAttempt) -> dict:
        with self._lock:
            if self._other is None:
                self._other = TraceWriter(_fresh_path(self.directory, "other"), secrets=list(self._secrets), meta={
                    "recorded_by": "chain-studio proxy", "upstream": self.upstream_host,
                    "contents": "exchanges other than chat completions"})
            attempt.call = self._other_calls
            self._other_calls += 1
            self._other.call_attempt(attempt)
            entry = self._entry(attempt, self._other.path.name, None)
            self._log(entry)
            return entry

    def record_failure(self, attempt: CallAttempt, error: str) -> None:
        """An exchange that went through but could not be recorded: say so in ``index.jsonl``."""
        with self._lock:
            entry = self._entry(attempt, None, None)
            entry["recording_error"] = self._redact(error)
            if not self._index.closed:
                self._log(entry)

    def _entry(self, a: CallAttempt, file: str | None, session: str | None) -> dict:
        self._exchanges += 1
        return {"n": self._exchanges, "started_at": a.started_at, "method": a.method,
                "path": urlsplit(a.url).path, "status": a.status,
                "latency_ms": None if a.latency_ms is None else round(a.latency_ms, 1),
                "file": file, "call": a.call, "attempt": a.attempt, "session": session,
                **({"error": a.error} if a.error else {})}

    def trace_files(self) -> list[Path]:
        with self._lock:
            return [w.path for w in [*self._writers.values(), *self._resp_writers.values()]]

    def close(self) -> None:
        """Add each conversation's last reply to its stream, then close every file."""
        with self._lock:
            for conv, op in self._builder.finish():
                if conv in self._writers:
                    _apply(self._writers[conv], op)
            for w in [*self._writers.values(), *self._resp_writers.values()]:
                w.close()
            if self._other is not None:
                self._other.close()
            if not self._index.closed:
                self._index.close()


def _apply(writer: TraceWriter, op: tuple) -> None:
    if op[0] == "add":
        writer.message_added(op[1])
    elif op[0] == "version":
        writer.message_added(op[1], source=op[2])
    elif op[0] == "event":
        writer.memory_event(op[1])


def _fresh_path(directory: Path, stem: str) -> Path:
    """``stem.jsonl``, or ``stem-2.jsonl`` ... when an earlier run left that file: a new run's conversation
    never appends into another run's trace (its calls would be numbered as if they continued it)."""
    path, n = directory / f"{stem}.jsonl", 1
    while path.exists():
        n += 1
        path = directory / f"{stem}-{n}.jsonl"
    return path
