"""A lens on an Arize Phoenix server: a project's LLM spans, read page by page, as a trace.

Phoenix's REST API (``GET /v1/projects/{project}/spans``, arize-phoenix ``server/api/routers/v1/spans.py``)
returns a project's spans newest first, ``limit`` per page (at most 1000), with a ``next_cursor`` for the
next page; ``span_kind=LLM`` keeps the model calls and ``trace_id`` one conversation. Attributes come
flattened (``llm.input_messages.0.message.role``). The project is named by id (the UI's
``/projects/UHJvamVjdDox``) or by name.

Each LLM span becomes one call, reading the richest source first (OpenInference conventions, which Phoenix
also derives from OTel ``gen_ai.*`` spans on ingest):

1. ``input.value`` when its JSON is a request body (``input.mime_type`` application/json): the exact body
   sent (Chain Studio's own OTLP export and the OpenInference instrumentations record it there);
2. otherwise the body is rebuilt from ``llm.input_messages.N.message.*``, ``llm.tools.N.tool.json_schema``,
   ``llm.model_name`` and ``llm.invocation_parameters``, and a warning says the call was rebuilt;

and the response from ``output.value`` when it is a completion, else from ``llm.output_messages`` and
``llm.token_count.*``. Several traces (conversations) in a project: the newest is taken and a warning names
the others (``trace_id`` picks one). ``PHOENIX_API_KEY`` is sent as a bearer token when set, never stored.
"""
from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from agent_core.core.errors import InputError
from agent_core.trace.model import Trace

from .payload_log import trace_from_requests

PAGE_SIZE = 50
"""Spans per request to start with; halved while Phoenix cannot answer a page in time (a full-history
conversation's late spans carry megabytes each)."""
_PROJECT_URL = re.compile(r"^(https?://[^/?#]+(?:/[^?#]*?)?)/projects/([^/?#]+)")
_MSG = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(.+)$")
_TOOL_CALL = re.compile(r"^tool_calls\.(\d+)\.tool_call\.(id|function\.name|function\.arguments)$")
_CONTENTS = re.compile(r"^contents\.(\d+)\.message_content\.(type|text|image\.image\.url)$")


class PhoenixError(InputError):
    """The Phoenix URL cannot be read (not a project URL, no such project, server unreachable)."""


class _PageTimeout(PhoenixError):
    """One page took too long (``iter_pages`` retries it smaller)."""


def parse_project_url(url: str) -> tuple[str, str]:
    """``http://host:6006/projects/<id or name>[/...]`` -> (base URL, project identifier)."""
    m = _PROJECT_URL.match(url.strip())
    if not m:
        raise PhoenixError(f"{url!r} is not a Phoenix project URL (http://HOST:6006/projects/<id or name>)")
    return m.group(1), urllib.parse.unquote(m.group(2))


def _get(url: str, timeout: float) -> Any:
    headers = {"Accept": "application/json"}
    if os.environ.get("PHOENIX_API_KEY"):
        headers["Authorization"] = "Bearer " + os.environ["PHOENIX_API_KEY"]
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as err:
        detail = err.read()[:300].decode("utf-8", "replace")
        raise PhoenixError(f"{url.split('?')[0]}: HTTP {err.code} {' '.join(detail.split())}") from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        if isinstance(reason, TimeoutError) or isinstance(err, TimeoutError):
            raise _PageTimeout(f"{url.split('?')[0]}: Phoenix did not answer within {timeout:.0f} s") from None
        raise PhoenixError(f"{url.split('?')[0]}: cannot reach Phoenix ({reason})") from None
    except ValueError:
        raise PhoenixError(f"{url.split('?')[0]}: the answer is not JSON (is this a Phoenix server?)") from None


def iter_pages(base: str, project: str, *, trace_id: str | None = None, page_size: int = PAGE_SIZE,
               timeout: float = 60.0) -> Iterator[list[dict]]:
    """The project's LLM spans, one page (a list) at a time, following ``next_cursor``; a page that times out
    is asked again with half as many spans."""
    cursor: str | None = None
    seen: set[str] = set()
    while True:
        query: list[tuple[str, str]] = [("limit", str(page_size)), ("span_kind", "LLM")]
        if trace_id:
            query.append(("trace_id", trace_id))
        if cursor:
            query.append(("cursor", cursor))
        url = f"{base}/v1/projects/{urllib.parse.quote(project, safe='')}/spans?{urllib.parse.urlencode(query)}"
        try:
            page = _get(url, timeout)
        except _PageTimeout:
            if page_size == 1:
                raise
            page_size = max(1, page_size // 2)        # the same cursor again, fewer spans per answer
            continue
        data = page.get("data") if isinstance(page, dict) else None
        if not isinstance(data, list):
            raise PhoenixError(f"{base}: unexpected answer to the spans query (no data list)")
        yield [s for s in data if isinstance(s, dict)]
        cursor = page.get("next_cursor")
        if not cursor or cursor in seen:
            return
        seen.add(cursor)


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def _messages(attrs: dict, kind: str) -> list[dict]:
    by_index: dict[int, dict] = {}
    for key, value in attrs.items():
        m = _MSG.match(key)
        if m and m.group(1) == kind:
            by_index.setdefault(int(m.group(2)), {})[m.group(3)] = value
    out = []
    for _, fields in sorted(by_index.items()):
        message: dict[str, Any] = {"role": fields.get("role")}
        contents: dict[int, dict] = {}
        calls: dict[int, dict] = {}
        for key, value in fields.items():
            cm, tm = _CONTENTS.match(key), _TOOL_CALL.match(key)
            if cm:
                contents.setdefault(int(cm.group(1)), {})[cm.group(2)] = value
            elif tm:
                call = calls.setdefault(int(tm.group(1)), {"id": None, "type": "function",
                                                           "function": {"name": None, "arguments": "{}"}})
                if tm.group(2) == "id":
                    call["id"] = value
                else:
                    call["function"][tm.group(2).split(".")[1]] = value
        if "content" in fields:
            message["content"] = fields["content"]
        elif contents:
            message["content"] = [{"type": "text", "text": c.get("text", "")} if c.get("type", "text") == "text"
                                  else {"type": "image_url", "image_url": {"url": c.get("image.image.url")}}
                                  for _, c in sorted(contents.items())]
        else:
            message["content"] = None if calls else ""
        if isinstance(fields.get("name"), str):
            message["name"] = fields["name"]
        if calls:
            message["tool_calls"] = [calls[i] for i in sorted(calls)]
        if fields.get("tool_call_id"):
            message["tool_call_id"] = fields["tool_call_id"]
        if kind == "output" and fields.get("finish_reason"):
            message["_finish_reason"] = fields["finish_reason"]
        out.append(message)
    return out


def _request(attrs: dict, where: str, warnings: list[str]) -> dict:
    body = _json(attrs.get("input.value"))
    if isinstance(body, dict) and isinstance(body.get("messages"), list):
        return body
    rebuilt: dict[str, Any] = {"model": attrs.get("llm.model_name"), "messages": _messages(attrs, "input")}
    params = _json(attrs.get("llm.invocation_parameters"))
    if isinstance(params, dict):
        rebuilt.update({k: v for k, v in params.items() if k not in ("messages", "model")})
    tools = [_json(v) for k, v in sorted(attrs.items(), key=lambda kv: _tool_index(kv[0]))
             if re.match(r"^llm\.tools\.\d+\.tool\.json_schema$", k)]
    if tools:
        rebuilt["tools"] = [t for t in tools if isinstance(t, dict)]
    warnings.append(f"{where}: no exact request body (input.value); rebuilt from llm.input_messages"
                    + ("" if tools else ", which record no tools"))
    return rebuilt


def _tool_index(key: str) -> int:
    m = re.match(r"^llm\.tools\.(\d+)\.", key)
    return int(m.group(1)) if m else -1


def _response(attrs: dict) -> dict | None:
    body = _json(attrs.get("output.value"))
    if isinstance(body, dict) and ("choices" in body or "error" in body):
        return body
    outputs = _messages(attrs, "output")
    if not outputs:
        return None
    reply = outputs[0]
    finish = reply.pop("_finish_reason", None)
    response: dict[str, Any] = {"object": "chat.completion", "model": attrs.get("llm.model_name"),
                                "choices": [{"index": 0, "message": reply, "finish_reason": finish}]}
    usage = {k: attrs[a] for k, a in (("prompt_tokens", "llm.token_count.prompt"),
                                      ("completion_tokens", "llm.token_count.completion"))
             if isinstance(attrs.get(a), int)}
    if usage:
        response["usage"] = usage
    return response


def _ms(span: dict) -> float | None:
    try:
        start = datetime.fromisoformat(str(span["start_time"]).replace("Z", "+00:00"))
        end = datetime.fromisoformat(str(span["end_time"]).replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return None
    return (end - start).total_seconds() * 1000


def spans_to_trace(spans: list[dict], source: str) -> Trace:
    """LLM spans of one conversation (any order) -> a trace, calls in start order."""
    warnings: list[str] = []
    spans = sorted(spans, key=lambda s: str(s.get("start_time", "")))
    bodies, responses, statuses, started, latencies = [], [], [], [], []
    for span in spans:
        attrs = span.get("attributes") if isinstance(span.get("attributes"), dict) else {}
        where = f"span {span.get('name', '?')} ({(span.get('context') or {}).get('span_id', '?')})"
        bodies.append(_request(attrs, where, warnings))
        response = _response(attrs)
        responses.append(response)
        status = attrs.get("http.response.status_code")
        if not isinstance(status, int):
            status = 400 if span.get("status_code") == "ERROR" else 200
        statuses.append(status)
        started.append(span.get("start_time") if isinstance(span.get("start_time"), str) else None)
        latencies.append(_ms(span))
    trace = trace_from_requests(bodies, responses, statuses=statuses, started_at=started, latency_ms=latencies,
                                source=source, format="phoenix")
    trace.warnings.extend(warnings)
    return trace


def open_project(url: str, *, trace_id: str | None = None, page_size: int = PAGE_SIZE,
                 progress: Callable[[int, int], None] | None = None) -> Trace:
    """Read a Phoenix project's LLM spans page by page and build the trace of one conversation.

    Args:
        url: the project's URL in Phoenix (``http://127.0.0.1:6006/projects/<id or name>``).
        trace_id: the conversation (OTel trace id) to open; default the newest one.
        page_size: spans per request (Phoenix allows up to 1000).
        progress: called after each page with (pages read, spans so far).
    """
    base, project = parse_project_url(url)
    by_trace: dict[str, list[dict]] = {}
    pages = total = 0
    for page in iter_pages(base, project, trace_id=trace_id, page_size=page_size):
        pages += 1
        total += len(page)
        for span in page:
            by_trace.setdefault(str((span.get("context") or {}).get("trace_id")), []).append(span)
        if progress is not None:
            progress(pages, total)
    if not by_trace:
        raise PhoenixError(f"{url}: the project has no LLM spans"
                           + (f" in trace {trace_id}" if trace_id else ""))
    newest = max(by_trace, key=lambda t: max(str(s.get("start_time", "")) for s in by_trace[t]))
    trace = spans_to_trace(by_trace[newest], source=f"{base}/projects/{project}#trace-{newest}")
    trace.meta["phoenix"] = {"base": base, "project": project, "trace_id": newest, "spans": total, "pages": pages}
    if len(by_trace) > 1:
        trace.warnings.insert(0, f"the project holds {len(by_trace)} traces (conversations); showing the newest, "
                                 f"{newest}; choose another with --trace-id "
                                 + ", ".join(t for t in by_trace if t != newest)[:600])
    return trace
