"""Traces as OpenTelemetry GenAI spans: an OTLP JSON file, a push to any OTLP/HTTP endpoint, or live.

One trace per conversation, one span per call: a root span ``conversation <name>`` covering every call
(``chain_studio.*`` attributes), and under it one CLIENT span ``chat <model>`` per call with the
attributes of ``genai.call_attributes`` and one ``chain_studio.lint.finding`` event per linter finding.
Timestamps are the trace's: a call starts at its ``started_at`` and lasts its ``latency_ms``; a call
recorded without them gets a position after the previous one, and the span says so
(``chain_studio.timing`` = ``inferred``).

The spans are made by the real ``opentelemetry-sdk`` and encoded by the real OTLP exporters (imported
lazily: nothing below the export layer loads them). Resource attributes and exporter headers follow the
standard variables (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES`` -- Phoenix reads the project from
``openinference.project.name`` there --, ``OTEL_EXPORTER_OTLP_HEADERS``). API keys never leave: every string
goes through ``Secrets.scrub`` first (the keys a recording knew of, and anything shaped like a key).
"""
from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from agent_core.core.errors import InputError
from agent_core.trace.model import Call, Trace

from .curl import call_base_url
from .genai import call_attributes

FINDING_EVENT = "chain_studio.lint.finding"
TRACES_PATH = "/v1/traces"
_KEY_SHAPES = re.compile(r"\b(sk-(?:proj-|ant-)?[A-Za-z0-9_\-]{16,}|AIza[0-9A-Za-z_\-]{30,})\b")
_MAX_EVENTS = 10_000
_NS = 1_000_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class OtlpError(InputError):
    """The OTLP destination cannot be used (not an http(s) URL, unreachable, refused the spans)."""


class Secrets:
    """The strings that must never leave in a span: known keys, and anything shaped like an API key."""

    def __init__(self, known: Iterable[str | None] = ()):
        self.known: list[str] = []
        self.add(known)

    def add(self, known: Iterable[str | None]) -> None:
        for s in known:
            if s and s not in self.known:
                self.known.append(s)
        self.known.sort(key=len, reverse=True)

    def scrub(self, text: str) -> str:
        for s in self.known:
            if s in text:
                text = text.replace(s, "[REDACTED]")
        if "sk-" in text or "AIza" in text:          # the regex only where a key could be (it is slow on MBs)
            text = _KEY_SHAPES.sub("[REDACTED]", text)
        return text


def require_sdk() -> None:
    """``OtlpError`` naming the install command when the OpenTelemetry SDK or its OTLP exporter is missing."""
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError as err:
        raise OtlpError(f"OpenTelemetry export needs the SDK and its OTLP exporter ({err.name} is missing): "
                        "pip install 'chain-studio[otel]'") from None


def traces_endpoint(url: str) -> str:
    """The OTLP/HTTP traces URL for a collector's base URL (``http://host:4318`` -> ``.../v1/traces``)."""
    parts = url.split("?", 1)[0].rstrip("/")
    if not re.match(r"^https?://[^/\s@]+", parts):
        raise OtlpError(f"--otlp-endpoint must be an http(s) URL such as http://127.0.0.1:4318, got {url!r}")
    return parts if parts.endswith(TRACES_PATH) else parts + TRACES_PATH


def _ns(started_at: str | None) -> int | None:
    if not isinstance(started_at, str):
        return None
    try:
        moment = datetime.fromisoformat(started_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return (moment - _EPOCH) // timedelta(microseconds=1) * 1000    # integers: a float loses the nanoseconds


def _finding_attrs(finding: Any, scrub: Any) -> dict[str, Any]:
    data = finding.export()
    attrs = {f"chain_studio.lint.{k}": scrub(v) if isinstance(v, str) else v
             for k, v in data.items() if v is not None and not isinstance(v, list)}
    if data.get("tool_call_ids"):
        attrs["chain_studio.lint.tool_call_ids"] = [scrub(str(i)) for i in data["tool_call_ids"]]
    return attrs


class SpanWriter:
    """A tracer over the real SDK whose spans go to one exporter; one conversation = one trace.

    Args:
        exporter: an SDK ``SpanExporter`` (the OTLP/HTTP one, or the in-memory one for a file).
        secrets: what to scrub from every string.
        batch: export in the background (live use) instead of at each span's end.
    """

    def __init__(self, exporter: Any, secrets: Secrets | None = None, batch: bool = False):
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import SpanLimits, TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

        self.secrets = secrets or Secrets()
        resource = Resource.create({"service.name": "chain-studio"})   # OTEL_SERVICE_NAME / _RESOURCE_ATTRIBUTES win
        self.provider = TracerProvider(resource=resource, span_limits=SpanLimits(
            max_events=_MAX_EVENTS, max_span_attributes=256, max_event_attributes=64))
        processor = BatchSpanProcessor(exporter, schedule_delay_millis=500) if batch else SimpleSpanProcessor(exporter)
        self.provider.add_span_processor(processor)
        self.tracer = self.provider.get_tracer("chain-studio", _version())

    def open_conversation(self, name: str, start_ns: int, attributes: dict[str, Any]) -> Any:
        """Start the conversation's root span; calls go under it until ``close_conversation``."""
        from opentelemetry.trace import SpanKind

        return self.tracer.start_span(f"conversation {self.secrets.scrub(name)}", kind=SpanKind.INTERNAL,
                                      start_time=start_ns, attributes=attributes)

    def call_span(self, root: Any, *, request: Any, response: Any, status: int | None, error: str | None,
                  url: str | None, request_sha256: str | None, start_ns: int, end_ns: int, findings: list,
                  extra: dict[str, Any]) -> None:
        """One call's span under ``root``, ended at ``end_ns``."""
        from opentelemetry import trace as otel_trace
        from opentelemetry.trace import SpanKind, Status, StatusCode

        scrub = self.secrets.scrub
        attrs = call_attributes(request, response, status=status, error=error, url=url,
                                request_sha256=request_sha256, scrub=scrub)
        attrs.update(extra)
        errors = sum(1 for f in findings if f.severity == "error")
        attrs["chain_studio.lint.findings"] = len(findings)
        attrs["chain_studio.lint.errors"] = errors
        model = attrs.get("gen_ai.request.model", "")
        span = self.tracer.start_span(f"chat {model}".strip(), context=otel_trace.set_span_in_context(root),
                                      kind=SpanKind.CLIENT, start_time=start_ns, attributes=attrs)
        for f in findings:
            span.add_event(FINDING_EVENT, _finding_attrs(f, scrub), timestamp=start_ns)
        if error is not None or (status is not None and status >= 400):
            span.set_status(Status(StatusCode.ERROR, scrub(error or f"HTTP {status}")[:2000]))
        span.end(end_time=max(end_ns, start_ns))

    def close_conversation(self, root: Any, end_ns: int, calls: int) -> None:
        root.set_attribute("chain_studio.calls", calls)
        root.end(end_time=end_ns)

    def shutdown(self) -> None:
        """Export what is pending and stop (the live exporter's last word)."""
        self.provider.force_flush()
        self.provider.shutdown()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("chain-studio")
    except PackageNotFoundError:
        return "0"


def _findings_by_call(trace: Trace, profile: str) -> tuple[dict[int, list], str | None]:
    from agent_core.lint.scan import lint_trace

    try:
        findings = lint_trace(trace, profile=profile)
    except Exception as err:  # noqa: BLE001 -- a linter bug must not cost the user the export
        return {}, f"the linter failed on this trace ({type(err).__name__}: {err})"
    by_call: dict[int, list] = {}
    for f in findings:
        by_call.setdefault(f.call, []).append(f)
    return by_call, None


def write_spans(trace: Trace, writer: SpanWriter, *, profile: str = "openai",
                conversation_id: str | None = None) -> int:
    """Every call of ``trace`` as spans under one root; returns the number of call spans."""
    by_call, lint_note = _findings_by_call(trace, profile)
    conversation_id = conversation_id or uuid.uuid4().hex
    timing: list[tuple[int, int, bool]] = []
    cursor = None
    for call in trace.calls:
        start = _ns(call.started_at)
        inferred = start is None
        if start is None:
            start = cursor if cursor is not None else time.time_ns()
        length = int(call.latency_ms * 1_000_000) if isinstance(call.latency_ms, (int, float)) \
            and call.latency_ms >= 0 else (0 if not inferred else 1_000_000)
        timing.append((start, start + length, inferred))
        cursor = start + length + (1_000_000 if inferred else 0)
    first = min((t[0] for t in timing), default=time.time_ns())
    last = max((t[1] for t in timing), default=first)
    name = Path(trace.source).name if trace.source else "trace"
    root_attrs: dict[str, Any] = {"chain_studio.source": writer.secrets.scrub(str(trace.source)),
                                  "chain_studio.format": trace.format, "gen_ai.conversation.id": conversation_id}
    if lint_note:
        root_attrs["chain_studio.lint.note"] = lint_note
    if trace.warnings:
        root_attrs["chain_studio.warnings"] = [writer.secrets.scrub(w) for w in trace.warnings[:100]]
    root = writer.open_conversation(name, first, root_attrs)
    for call, (start, end, inferred) in zip(trace.calls, timing):
        extra: dict[str, Any] = {"gen_ai.conversation.id": conversation_id, "chain_studio.call": call.index}
        if inferred:
            extra["chain_studio.timing"] = "inferred"
        if call.purpose != "chat":
            extra["chain_studio.purpose"] = call.purpose
        writer.call_span(root, request=call.request, response=call.response, status=call.status, error=call.error,
                         url=_call_url(call), request_sha256=call.request_sha256, start_ns=start, end_ns=end,
                         findings=by_call.get(call.index, []), extra=extra)
    writer.close_conversation(root, last, len(trace.calls))
    return len(trace.calls)


def write_conversations(trace: Trace, writer: SpanWriter, *, profile: str = "openai") -> int:
    """``write_spans`` for each conversation of the file (a dataset holds several): one OTel trace each."""
    from agent_core.ingest.detect import split_conversations

    return sum(write_spans(part, writer, profile=profile) for part in split_conversations(trace))


def _call_url(call: Call) -> str | None:
    return call_base_url(call) or next((a.url for a in reversed(call.attempts) if a.url), None)


class _JsonCollector:
    """An SDK span exporter that encodes each finished span to OTLP JSON at once (the SDK's span is dropped), so a
    long trace is held once, as the document's dicts, not also as SDK spans."""

    def __init__(self) -> None:
        self.resource: dict | None = None
        self.scope: dict | None = None
        self.spans: list[dict] = []

    def export(self, spans: Any) -> Any:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        from opentelemetry.sdk.trace.export import SpanExportResult

        document = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
        for resource in document.get("resourceSpans", []):
            self.resource = resource.get("resource", {}) if self.resource is None else self.resource
            for scope in resource.get("scopeSpans", []):
                self.scope = scope.get("scope", {}) if self.scope is None else self.scope
                for span in scope.get("spans", []):
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if span.get(key):
                            span[key] = _hex(span[key])
                    self.spans.append(span)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def document(self) -> str:
        """``{"resourceSpans": [...]}``, ids in hex as OTLP/JSON says (protobuf's JSON would give base64)."""
        body = {"resourceSpans": [{"resource": self.resource or {},
                                   "scopeSpans": [{"scope": self.scope or {}, "spans": self.spans}]}]}
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")) + "\n"


def _hex(b64: str) -> str:
    import base64

    return base64.b64decode(b64).hex()


def trace_otlp_json(trace: Trace, *, profile: str = "openai", secrets: Iterable[str] = ()) -> str:
    """The whole trace as one OTLP JSON document (what ``export --as otlp`` writes)."""
    require_sdk()
    collector = _JsonCollector()
    writer = SpanWriter(collector, Secrets(secrets))
    write_conversations(trace, writer, profile=profile)
    writer.shutdown()
    return collector.document()


def http_exporter(endpoint: str) -> Any:
    """The SDK's OTLP/HTTP (protobuf) span exporter for ``endpoint`` (headers from ``OTEL_EXPORTER_OTLP_HEADERS``)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=traces_endpoint(endpoint))


class _Checked:
    """Wraps an exporter: counts what was accepted, and after the first refusal stops trying (live use).

    The SDK only logs a failed export, after retrying up to its timeout; live, a dead endpoint would cost that
    wait on every batch and a log line each time. Here the first failure is reported once (``on_failure``)
    and later spans are counted as not sent: the recorded trace file still has every call.
    """

    def __init__(self, inner: Any, on_failure: Any = None):
        self.inner = inner
        self.failures = 0
        self.exported = 0
        self.on_failure = on_failure

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        if self.failures:
            self.failures += len(spans)
            return SpanExportResult.FAILURE
        result = self.inner.export(spans)
        if result == SpanExportResult.SUCCESS:
            self.exported += len(spans)
        else:
            self.failures += len(spans)
            if self.on_failure is not None:
                self.on_failure()
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def quiet_sdk_logs() -> None:
    """The SDK logs each retry of a failed export; Chain Studio reports a failure once, in its own words."""
    import logging

    logging.getLogger("opentelemetry.exporter.otlp.proto.http").setLevel(logging.CRITICAL)


_BATCH_BYTES = 4_000_000
"""A push is cut into requests of about this much attribute text (receivers cap a request's size: the
Collector's and most backends' defaults are a few MB)."""


def _batches(spans: list) -> Iterable[list]:
    batch: list = []
    size = 0
    for span in spans:
        weight = sum(len(v) for v in (span.attributes or {}).values() if isinstance(v, str))
        if batch and size + weight > _BATCH_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(span)
        size += weight
    if batch:
        yield batch


def send_trace(trace: Trace, endpoint: str, *, profile: str = "openai", secrets: Iterable[str] = (),
               progress: Any = None) -> int:
    """Push the trace's spans to an OTLP/HTTP endpoint; returns the spans sent (roots included).

    Requests of about 4 MB each (``progress(sent, total)`` after each). The wait for an unreachable
    endpoint is the SDK's (``OTEL_EXPORTER_OTLP_TIMEOUT``, 10 s by default).
    """
    require_sdk()
    from opentelemetry.sdk.trace.export import SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    writer = SpanWriter(memory, Secrets(secrets))
    write_conversations(trace, writer, profile=profile)
    writer.shutdown()
    spans = list(memory.get_finished_spans())
    exporter = http_exporter(endpoint)
    quiet_sdk_logs()
    sent = 0
    try:
        for batch in _batches(spans):
            if exporter.export(batch) != SpanExportResult.SUCCESS:
                raise OtlpError(f"{traces_endpoint(endpoint)} did not accept the spans ({sent} of {len(spans)} "
                                "were sent; is an OTLP/HTTP receiver listening there?)")
            sent += len(batch)
            if progress is not None:
                progress(sent, len(spans))
    finally:
        exporter.shutdown()
    return sent
