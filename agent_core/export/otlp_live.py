"""Live OTLP export: each recorded call leaves as a GenAI span while the app runs (``chat`` / ``proxy --otlp-endpoint``).

``LiveExporter`` is a ``trace/recorder.py : Recorder`` (the chat session adds it to its ``FanOut``) and a
proxy observer (``serve/proxy_recorder.py : ProxyRecorder`` calls ``conversation_call`` for every chat
exchange it places). It lives in the export layer because it loads the OpenTelemetry SDK; the layers below
only hold a reference to an object with these methods.

One trace per conversation: the first call of a conversation opens its root span, every attempt becomes a
CLIENT span under it (batched in the background, so the app never waits on the backend), and ``close()``
ends the roots and flushes. A retried call gives one span per attempt (``chain_studio.attempt``): the
recorder cannot know which attempt is the last. Findings come from linting each payload on its own
(``lint/scan.py : lint_request``); checks across calls need the whole trace (``export --as otlp``).
"""
from __future__ import annotations

import sys
import threading
import time
import uuid
from collections.abc import Iterable
from typing import Any

from agent_core.core.msg import Msg
from agent_core.trace.events import CallAttempt, MemoryEvent

from .otlp import (
    Secrets,
    SpanWriter,
    _Checked,
    _ns,
    http_exporter,
    quiet_sdk_logs,
    require_sdk,
    traces_endpoint,
)


class LiveExporter:
    """Sends every recorded call to an OTLP/HTTP endpoint as it happens.

    Args:
        endpoint: the collector or backend (``http://127.0.0.1:4318`` or ``.../v1/traces``).
        profile: the linter profile whose findings become span events.
        secrets: strings never to export (the API key); more with ``add_secrets``.
        name: the conversation name on the root spans (``chat``, ``proxy``).
    """

    def __init__(self, endpoint: str, *, profile: str = "openai", secrets: Iterable[str | None] = (),
                 name: str = "chat"):
        require_sdk()
        self.endpoint = traces_endpoint(endpoint)
        self.profile = profile
        self.name = name
        self._checked = _Checked(http_exporter(self.endpoint), on_failure=self._report_failure)
        quiet_sdk_logs()
        self.writer = SpanWriter(self._checked, Secrets(secrets), batch=True)
        self._lock = threading.Lock()
        self._roots: dict[str, list[Any]] = {}     # key -> [root span, conversation id, calls, last end ns]
        self._closed = False

    def _report_failure(self) -> None:
        print(f"chain-studio: {self.endpoint} did not accept the spans; recording goes on, later calls are not "
              "exported (re-send the trace file with: chain-studio export FILE --as otlp --otlp-endpoint URL)",
              file=sys.stderr, flush=True)

    def add_secrets(self, secrets: Iterable[str | None]) -> None:
        self.writer.secrets.add(secrets)

    # --- Recorder ---------------------------------------------------------

    def message_added(self, msg: Msg, source: str = "memory") -> None:
        pass

    def memory_event(self, event: MemoryEvent) -> None:
        with self._lock:
            root = self._roots.get("chat")
        if root is not None:
            root[0].add_event("chain_studio.memory", {
                "chain_studio.memory.type": event.type, "chain_studio.memory.policy": event.policy,
                "chain_studio.memory.removed": len(event.removed),
                "chain_studio.memory.reason": self.writer.secrets.scrub(event.reason)})

    def call_attempt(self, attempt: CallAttempt) -> None:
        self.conversation_call("chat", None, attempt)

    # --- proxy observer ---------------------------------------------------

    def conversation_call(self, key: str, label: str | None, attempt: CallAttempt,
                          secrets: Iterable[str] = ()) -> None:
        """One attempt of a call in conversation ``key`` (``label``: the session the client named)."""
        from agent_core.lint.scan import lint_request

        if self._closed:
            return
        self.add_secrets(secrets)
        start = _ns(attempt.started_at) or time.time_ns()
        end = start + int((attempt.latency_ms or 0) * 1_000_000)
        with self._lock:
            entry = self._roots.get(key)
            if entry is None:
                conversation_id = uuid.uuid4().hex
                attrs: dict[str, Any] = {"gen_ai.conversation.id": conversation_id,
                                         "chain_studio.recorded_by": f"chain-studio {self.name}"}
                if label:
                    attrs["chain_studio.session"] = self.writer.secrets.scrub(label)
                title = f"{self.name} {label}" if label else f"{self.name} {key}"
                entry = self._roots[key] = [self.writer.open_conversation(title, start, attrs), conversation_id, 0, end]
            entry[2] += 1
            entry[3] = max(entry[3], end)
            root, conversation_id = entry[0], entry[1]
        try:
            findings = lint_request(attempt.request_body, profile=self.profile, call=attempt.call) \
                if isinstance(attempt.request_body, dict) else []
        except Exception:  # noqa: BLE001 -- a linter bug must not stop the export of the call
            findings = []
        extra = {"gen_ai.conversation.id": conversation_id, "chain_studio.call": attempt.call,
                 "chain_studio.attempt": attempt.attempt}
        if attempt.purpose != "chat":
            extra["chain_studio.purpose"] = attempt.purpose
        self.writer.call_span(root, request=attempt.request_body, response=attempt.response_body,
                              status=attempt.status, error=attempt.error, url=attempt.url,
                              request_sha256=attempt.request_sha256, start_ns=start, end_ns=end,
                              findings=findings, extra=extra)

    # --- end --------------------------------------------------------------

    @property
    def failed_spans(self) -> int:
        """Spans the endpoint did not accept so far."""
        return self._checked.failures

    def close(self) -> str:
        """End every conversation's root span, flush, stop; returns one line saying what was sent."""
        if self._closed:
            return ""
        self._closed = True
        with self._lock:
            roots = list(self._roots.values())
        for root, _, calls, last in roots:
            self.writer.close_conversation(root, last, calls)
        self.writer.shutdown()
        sent, failed = self._checked.exported, self._checked.failures
        line = f"sent {sent} spans to {self.endpoint}"
        return line + (f"; {failed} spans were not accepted" if failed else "")
