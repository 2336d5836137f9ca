"""Inspect AI eval logs (``inspect eval --log-format json``) as a trace: one call per ``model`` event.

A model event's ``call.request`` is what Inspect passed to the provider's SDK: the request body plus SDK
keyword arguments (``extra_headers``, ``extra_query``, ``extra_body``, ``timeout``), which are not part of the
body and are dropped (``extra_body`` is merged into it, as the SDK does). Logs written directly keep the
messages in a per-sample pool (``events_data["calls"]``) that ``call.call_refs`` (ranges) point into under
``call.call_key``; converted logs hold them inline. ``call.response`` is the provider's response. Each sample
(and epoch) is one conversation. A ``.eval`` log is a zstd zip: convert it with
``inspect log convert --to json``.
"""
from __future__ import annotations

from typing import Any

from agent_core.trace.model import Trace

from .otel_call import TelemetryCall, calls_to_trace

_SDK_KWARGS = ("extra_headers", "extra_query", "timeout")


def looks_like(value: Any) -> bool:
    """An Inspect eval log: ``{"version", "eval": {...}, "samples": [...]}``."""
    return isinstance(value, dict) and isinstance(value.get("eval"), dict) and "version" in value and \
        ("samples" in value or "status" in value)


def _ns(timestamp: Any) -> int:
    from datetime import datetime

    if not isinstance(timestamp, str):
        return 0
    try:
        return int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1e9)
    except ValueError:
        return 0


def _request(call: dict, pool: dict, warnings: list[str], where: str) -> dict | None:
    request = call.get("request")
    if not isinstance(request, dict):
        return None
    body = {k: v for k, v in request.items() if k not in _SDK_KWARGS and k != "extra_body"}
    if isinstance(request.get("extra_body"), dict):
        body.update(request["extra_body"])
    refs, key = call.get("call_refs"), call.get("call_key")
    if isinstance(refs, list) and isinstance(key, str):
        source = pool.get("calls") if isinstance(pool.get("calls"), list) else []
        items = []
        for ref in refs:
            if isinstance(ref, list) and len(ref) == 2 and all(isinstance(i, int) for i in ref) \
                    and 0 <= ref[0] <= ref[1] <= len(source):
                items.extend(source[ref[0]:ref[1]])
            else:
                warnings.append(f"{where}: call_refs entry {ref!r} points outside the sample's message pool")
        body[key] = items
    return body


def to_trace(value: dict, source: str) -> Trace:
    """The trace of an eval log (see the module docstring)."""
    warnings: list[str] = []
    calls: list[TelemetryCall] = []
    samples = value.get("samples") if isinstance(value.get("samples"), list) else []
    if not samples:
        warnings.append("the eval log holds no samples (a header-only log, or --no-log-samples): no calls")
    no_call = 0
    for sample in samples:
        if not isinstance(sample, dict):
            continue
        label = f"sample {sample.get('id')} epoch {sample.get('epoch', 1)}"
        pool = sample.get("events_data") if isinstance(sample.get("events_data"), dict) else {}
        for n, event in enumerate(sample.get("events") or []):
            if not isinstance(event, dict) or event.get("event") != "model":
                continue
            call = event.get("call") if isinstance(event.get("call"), dict) else {}
            body = _request(call, pool, warnings, f"{label} event {n}")
            if body is None:
                no_call += 1
                continue
            response = call.get("response") if isinstance(call.get("response"), dict) else None
            error = event.get("error")
            calls.append(TelemetryCall(body=body, response=response, status=400 if error else 200, exact=True,
                                       convention="inspect", start_ns=_ns(event.get("timestamp")),
                                       session=label, root=False))
    if no_call:
        warnings.append(f"{no_call} model event(s) hold no call.request (a provider Inspect does not log "
                        "requests for, or a cached response) and were skipped")
    extra = sorted({k for s in samples if isinstance(s, dict) for e in s.get("events") or [] if isinstance(e, dict)
                    and e.get("event") == "model" for k in ((e.get("call") or {}).get("request") or {})
                    if k in _SDK_KWARGS})
    if extra:
        warnings.append(f"SDK keyword arguments in call.request are not part of the body and were left out: "
                        f"{', '.join(extra)}")
    trace = calls_to_trace(calls, warnings, source, "inspect-eval")
    trace.meta["eval"] = {k: value["eval"].get(k) for k in ("task", "model", "created") if k in value["eval"]}
    return trace
