"""OTLP payloads, decoded: JSON or protobuf, gzip or not, traces or logs -> one plain dict shape.

Everything that reads OpenTelemetry data goes through here: the file importer (``ingest/otel.py``), the
receiver (``serve/collector.py``), and anything that talks OTLP over HTTP. The shape is OTLP/JSON
(``{"resourceSpans": [...]}`` / ``{"resourceLogs": [...]}``, camelCase keys) with two normalisations:
trace and span ids are lower-case hex (protobuf's JSON mapping writes them in base64; OTLP/JSON in hex),
and the resource's attributes are copied onto each span / log record as ``_resource`` (a plain dict).

Protobuf needs ``opentelemetry-proto`` (imported only when a protobuf body arrives).
"""
from __future__ import annotations

import base64
import binascii
import gzip
import json
import re
import zlib
from typing import Any

from agent_core.core.errors import InputError

MAX_DECODED_BYTES = 64 * 1024 * 1024
"""The largest payload a gzip body may expand to (a zip bomb is refused, not inflated)."""

_HEX = re.compile(r"^[0-9a-fA-F]*$")


class OtlpDecodeError(InputError):
    """An OTLP body that cannot be read (bad gzip, bad JSON, bad protobuf, a missing decoder)."""


def attr_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` (``{"stringValue": ...}`` ...) as a plain Python value."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "arrayValue" in value:
        return [attr_value(v) for v in _list(_dict(value["arrayValue"]).get("values"))]
    if "kvlistValue" in value:
        return {kv["key"]: attr_value(kv.get("value")) for kv in _list(_dict(value["kvlistValue"]).get("values"))
                if isinstance(kv, dict) and isinstance(kv.get("key"), str)}
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def attributes(items: Any) -> dict[str, Any]:
    """An OTLP attribute list (``[{"key", "value"}]``) as a dict (entries that are not key/value pairs are skipped)."""
    return {a["key"]: attr_value(a.get("value")) for a in _list(items)
            if isinstance(a, dict) and isinstance(a.get("key"), str)}


def failed(span: dict) -> bool:
    """The span's status is ERROR (code 2)."""
    return _dict(span.get("status")).get("code") in (2, "STATUS_CODE_ERROR")


def hex_id(value: Any) -> str | None:
    """A trace or span id as lower-case hex, whether it came as hex (OTLP/JSON) or base64 (protobuf's JSON)."""
    if not isinstance(value, str) or not value:
        return None
    if _HEX.match(value) and len(value) in (16, 32):
        return value.lower()
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return value
    return raw.hex() if len(raw) in (8, 16) else value


FIXED64 = 2 ** 64
"""OTLP's times are ``fixed64`` nanoseconds since the epoch; a value outside is no time OTLP can send."""


def nanos(record: dict, *keys: str) -> int:
    """The first of ``keys`` that holds a time in ns (an int, or a string of digits as OTLP/JSON writes it) that
    OTLP can carry (a ``fixed64``: 0 to 2**64 - 1), else 0."""
    for key in keys:
        value = record.get(key) if isinstance(record, dict) else None
        if isinstance(value, str) and value.isdigit() and len(value) <= 20:
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < FIXED64:
            return value
    return 0


def looks_like(value: Any) -> bool:
    """An OTLP/JSON export of spans or logs (or a list of such exports, as a file exporter appends them)."""
    exports = value if isinstance(value, list) else [value]
    return bool(exports) and all(isinstance(v, dict) and (isinstance(v.get("resourceSpans"), list)
                                                          or isinstance(v.get("resourceLogs"), list))
                                 for v in exports)


def _exports(value: Any) -> list[dict]:
    return [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, dict)]


def spans(value: Any) -> list[dict]:
    """Every span of an export (or list of exports), ids in hex, its resource's attributes under ``_resource``."""
    out = []
    for export in _exports(value):
        for resource in _list(export.get("resourceSpans")):
            if not isinstance(resource, dict):
                continue
            res = attributes(_dict(resource.get("resource")).get("attributes"))
            for scope in _list(resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans")):
                scope = _dict(scope)
                for span in _list(scope.get("spans")):
                    if isinstance(span, dict):
                        out.append({**span, "traceId": hex_id(span.get("traceId")), "spanId": hex_id(span.get("spanId")),
                                    "parentSpanId": hex_id(span.get("parentSpanId")), "_resource": res,
                                    "_scope": _dict(scope.get("scope")).get("name")})
    return out


def log_records(value: Any) -> list[dict]:
    """Every log record of an export, ids in hex, its resource's attributes under ``_resource``."""
    out = []
    for export in _exports(value):
        for resource in _list(export.get("resourceLogs")):
            if not isinstance(resource, dict):
                continue
            res = attributes(_dict(resource.get("resource")).get("attributes"))
            for scope in _list(resource.get("scopeLogs") or resource.get("instrumentationLibraryLogs")):
                for record in _list(_dict(scope).get("logRecords")):
                    if isinstance(record, dict):
                        out.append({**record, "traceId": hex_id(record.get("traceId")),
                                    "spanId": hex_id(record.get("spanId")), "_resource": res})
    return out


def event_name(record: dict) -> str | None:
    """A log record's event name: the ``eventName`` field (OTLP 1.5+) or the older ``event.name`` attribute."""
    name = record.get("eventName")
    if isinstance(name, str) and name:
        return name
    name = attributes(record.get("attributes")).get("event.name")
    return name if isinstance(name, str) else None


def decode(body: bytes, *, kind: str, content_type: str | None = None, content_encoding: str | None = None) -> dict:
    """An OTLP/HTTP request body (``kind`` "traces" or "logs") as the plain dict described above.

    ``content_type`` ``application/x-protobuf`` selects protobuf, anything else JSON; ``content_encoding``
    ``gzip`` (or ``deflate``) is undone first, up to ``MAX_DECODED_BYTES``.
    """
    if kind not in ("traces", "logs"):
        raise OtlpDecodeError(f"unknown OTLP signal {kind!r} (traces or logs)")
    encoding = (content_encoding or "").strip().lower()
    if encoding in ("gzip", "x-gzip") or (not encoding and body[:2] == b"\x1f\x8b"):
        body = _inflate(body, gzip_=True)
    elif encoding == "deflate":
        body = _inflate(body, gzip_=False)
    elif encoding not in ("", "identity"):
        raise OtlpDecodeError(f"unsupported Content-Encoding {content_encoding!r} (gzip, deflate or none)")
    mime = (content_type or "application/json").split(";")[0].strip().lower()
    if mime in ("application/x-protobuf", "application/protobuf"):
        value = _from_protobuf(body, kind)
    else:
        try:
            value = json.loads(body.decode("utf-8-sig"))
        except (UnicodeDecodeError, ValueError, RecursionError) as err:
            raise OtlpDecodeError(f"the OTLP/JSON body is not valid JSON ({type(err).__name__})") from None
    key = "resourceSpans" if kind == "traces" else "resourceLogs"
    if not isinstance(value, dict) or not isinstance(value.get(key, []), list):
        raise OtlpDecodeError(f"an OTLP {kind} body holds {key}; this one does not")
    value.setdefault(key, [])
    return value


def _inflate(body: bytes, gzip_: bool) -> bytes:
    try:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS if gzip_ else zlib.MAX_WBITS)
        out = d.decompress(body, MAX_DECODED_BYTES + 1)
    except zlib.error:
        raise OtlpDecodeError("the body is not valid gzip/deflate data") from None
    if len(out) > MAX_DECODED_BYTES:
        raise OtlpDecodeError(f"the body expands past {MAX_DECODED_BYTES // 1024 // 1024} MB and was refused")
    return out


def _from_protobuf(body: bytes, kind: str) -> dict:
    try:
        from google.protobuf.json_format import MessageToDict
        from google.protobuf.message import DecodeError
        if kind == "traces":
            from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
                ExportTraceServiceRequest as Request,
            )
        else:
            from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
                ExportLogsServiceRequest as Request,
            )
    except ImportError:
        raise OtlpDecodeError("OTLP protobuf needs the opentelemetry-proto package (pip install opentelemetry-proto); "
                              "or export OTLP/JSON (OTEL_EXPORTER_OTLP_PROTOCOL=http/json)") from None
    message = Request()
    try:
        message.ParseFromString(body)
    except DecodeError:
        raise OtlpDecodeError(f"the body is not an OTLP {kind} protobuf message") from None
    return MessageToDict(message)


def gzip_bytes(data: bytes) -> bytes:
    """``data`` gzip-compressed (for tests and clients that send OTLP with Content-Encoding gzip)."""
    return gzip.compress(data)
