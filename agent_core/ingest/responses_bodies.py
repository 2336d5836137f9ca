"""Responses API request bodies (or ``{"request", "response"}`` records of them) as a trace.

A pasted ``POST /responses`` body, a JSON array of them, or JSONL with one per
line: one call each, in order. Nothing is inferred here: what the model saw on
each call (the ``previous_response_id`` chain) is rebuilt from these bodies by
``trace/responses_chain.py`` wherever it is shown, and a chain whose earlier
responses are not in the file is reported as unknown, never guessed.
"""
from __future__ import annotations

from typing import Any

from agent_core.apis.responses import RESPONSES
from agent_core.core.limits import check_body
from agent_core.trace.model import Call, Trace


def _request(value: Any) -> Any:
    return value.get("request") if isinstance(value, dict) and "request" in value else value


def looks_like(value: Any) -> bool:
    """A Responses body or record, or a non-empty list of them."""
    if isinstance(value, list):
        return bool(value) and all(RESPONSES.claims(_request(v)) for v in value)
    return RESPONSES.claims(_request(value))


def to_trace(values: list, source: str, fmt: str = "responses-bodies") -> Trace:
    """One call per body or record; a record's ``response`` (and ``status``) is kept as recorded."""
    calls = []
    for n, v in enumerate(values):
        record = isinstance(v, dict) and "request" in v
        response = v.get("response") if record else None
        status = v.get("status") if record and isinstance(v.get("status"), int) else None
        check_body(_request(v), source, f"request {n}")
        calls.append(Call(index=n, request=_request(v), response=response if isinstance(response, dict) else None,
                          status=status))
    return Trace(source=source, format=fmt, calls=calls, meta={"api": "responses"})
