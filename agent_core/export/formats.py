"""Exports: one call as its exact payload JSON, a curl command or a pytest file that re-sends
it; a whole trace as Chain Studio JSONL, payload JSONL or a self-contained HTML report.

Every export can be redacted first (``redact=True``: ``redact.redact_trace``,
placeholders stable across the whole trace). No export ever holds an API key:
curl and the pytest file read ``$OPENAI_API_KEY`` when they run. The HTML report
needs no server and loads nothing: inline CSS and inline SVG only, a
Content-Security-Policy that forbids scripts and remote resources, and every
piece of trace text passed through ``html.escape``.
"""
from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path
from typing import Any

from agent_core.apis.base import api_for_body
from agent_core.apis.chat_completions import DEFAULT_BASE_URL
from agent_core.apis.responses import RESPONSES
from agent_core.core.errors import ChainStudioError
from agent_core.core.msg import content_text
from agent_core.export.curl import call_base_url
from agent_core.export.responses_pytest import responses_pytest
from agent_core.ingest.detect import load_any
from agent_core.trace.model import Call, Trace
from agent_core.trace.writer import write_trace

FORMATS = ("json", "curl", "pytest", "trace", "payloads", "html", "otlp")
_MAX_SHOWN_CHARS = 20_000
_ROLE_COLORS = {"system": "#7c3aed", "user": "#2563eb", "assistant": "#059669", "tool": "#d97706",
                "tools": "#9ca3af", "priming": "#d1d5db", "other": "#6b7280"}


class ExportError(ChainStudioError):
    """The export cannot be made (no such call, missing output path)."""


def pick_call(trace: Trace, call: int | None = None) -> Call:
    """Call ``call`` (negative counts from the end); the last call when None."""
    if not trace.calls:
        raise ExportError(f"{trace.source}: the trace has no calls to export")
    index = len(trace.calls) - 1 if call is None else call
    if not -len(trace.calls) <= index < len(trace.calls):
        raise ExportError(f"{trace.source}: no call {call}; the trace has calls 0..{len(trace.calls) - 1}")
    return trace.calls[index]


def _payload_text(call: Call, indent: int | None = None) -> str:
    if indent:
        return json.dumps(call.request, ensure_ascii=False, indent=indent)
    return json.dumps(call.request, ensure_ascii=False, separators=(",", ":"))


def call_json(trace: Trace, call: int | None = None) -> str:
    """The call's exact request body, pretty-printed (key order kept)."""
    return _payload_text(pick_call(trace, call), indent=2) + "\n"


def _sh_single(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def call_curl(trace: Trace, call: int | None = None, base_url: str | None = None) -> str:
    """A POSIX shell command that POSTs the exact body.

    The URL is ``${OPENAI_BASE_URL:-<recorded base URL or OpenAI>}`` plus the body's wire-API
    path (``/chat/completions``) and the key ``$OPENAI_API_KEY``, both read when the command
    runs; the body is single-quoted verbatim (compact JSON, non-ASCII kept).
    """
    c = pick_call(trace, call)
    default = base_url or call_base_url(c) or DEFAULT_BASE_URL
    default = re.sub(r'["\\$`]', "", default)     # it sits inside double quotes
    stream = bool(c.request.get("stream")) if isinstance(c.request, dict) else False
    path = api_for_body(c.request).paths[0]
    return (f'curl{" -N" if stream else ""} "${{OPENAI_BASE_URL:-{default}}}{path}" \\\n'
            f"  -H 'Content-Type: application/json' \\\n"
            f'  -H "Authorization: Bearer $OPENAI_API_KEY" \\\n'
            f"  --data-binary {_sh_single(_payload_text(c))}\n")


_PYTEST_TEMPLATE = '''"""Re-send call {index} of {source} and check the endpoint accepts it.

Exported by ``chain-studio export --as pytest``. Recorded outcome: {outcome}.
A payload the provider rejected keeps failing here until the app is fixed.

Endpoint: OPENAI_BASE_URL and OPENAI_API_KEY (CHAIN_STUDIO_MODEL overrides the
payload's model). With neither set, the bundled Chain Studio demo model is
started on a free port (skipped when chain-studio is not installed).
"""
from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

import pytest

# The exact request body, as recorded.
PAYLOAD_JSON = {payload!r}
RECORDED_STATUS = {status!r}


@pytest.fixture(scope="module")
def endpoint():
    base = os.environ.get("OPENAI_BASE_URL")
    key = os.environ.get("OPENAI_API_KEY")
    if base or key:
        yield (base or "{default_base}").rstrip("/"), key or ""
        return
    demo_server = pytest.importorskip("agent_core.serve.demo_server")
    with demo_server.DemoModelServer() as server:
        yield server.base_url, ""


def _post(url, data, key):
    headers = {{"Content-Type": "application/json"}}
    if key:
        headers["Authorization"] = "Bearer " + key
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Content-Type", ""), err.read()


def test_endpoint_accepts_the_recorded_payload(endpoint):
    base, key = endpoint
    data = PAYLOAD_JSON.encode("utf-8")
    if os.environ.get("CHAIN_STUDIO_MODEL"):
        body = json.loads(PAYLOAD_JSON)
        body["model"] = os.environ["CHAIN_STUDIO_MODEL"]
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    status, content_type, raw = _post(base + "/chat/completions", data, key)
    assert status == 200, "HTTP %s: %s" % (status, raw[:2000].decode("utf-8", "replace"))
    if content_type.startswith("text/event-stream"):
        lines = [line[5:].strip() for line in raw.decode("utf-8").splitlines() if line.startswith("data:")]
        assert lines and lines[-1] == "[DONE]", "the stream ended before [DONE]"
        chunks = [json.loads(line) for line in lines[:-1]]
        assert any(chunk.get("choices") for chunk in chunks)
    else:
        reply = json.loads(raw)
        assert reply["choices"], reply
        assert reply["choices"][0]["message"]["role"] == "assistant"
'''


def call_pytest(trace: Trace, call: int | None = None) -> str:
    """A standalone pytest file (stdlib + pytest only) that re-sends the exact body."""
    c = pick_call(trace, call)
    outcome = f"HTTP {c.status}" if c.status is not None else "no HTTP response"
    if c.error:
        outcome += ", " + " ".join(c.error.split())[:160]
    default = (call_base_url(c) or DEFAULT_BASE_URL).replace('"', "").replace("\\", "")
    source = Path(trace.source).name if trace.source else "a trace"
    if RESPONSES.claims(c.request):      # re-sent with the previous_response_id chain it continues
        return responses_pytest(trace, c, default, outcome)
    return _PYTEST_TEMPLATE.format(index=c.index, source=_docstring_safe(source), outcome=_docstring_safe(outcome),
                                   payload=_payload_text(c), status=c.status, default_base=default)


def _docstring_safe(text: str) -> str:
    return text.replace("\\", "/").replace('"""', "'''")


def payloads_jsonl(trace: Trace) -> str:
    """One request body per line, in call order (the input of any payload-log importer)."""
    return "".join(_payload_text(c) + "\n" for c in trace.calls)


# --- HTML -------------------------------------------------------------------

def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _findings(trace: Trace, profile: str) -> tuple[list[Any], str | None]:
    from agent_core.lint.scan import lint_trace

    try:
        return list(lint_trace(trace, profile=profile)), None
    except Exception as err:    # a broken finding must not cost the user the whole report
        return [], f"the linter failed on this trace ({type(err).__name__}: {err})"


def _token_parts(call: Call) -> dict[str, int]:
    from agent_core.trace.tokens import counter_for

    try:
        return counter_for(call.model).count_by_role(call.messages, call.tools)
    except Exception:
        return {}


def _svg_chart(trace: Trace, parts: list[dict[str, int]]) -> str:
    """Stacked horizontal bars, one per call: prompt tokens by role, reported prompt tokens as text."""
    if not parts:
        return "<p>No calls.</p>"
    totals = [sum(p.values()) for p in parts]
    peak = max(totals + [c.reported_prompt_tokens or 0 for c in trace.calls] + [1])
    bar_w, row_h, label_w = 560, 18, 70
    height = row_h * len(parts) + 30
    rows = []
    for i, (call, p) in enumerate(zip(trace.calls, parts)):
        y = 24 + i * row_h
        x = label_w
        rows.append(f'<text x="0" y="{y + 12}" class="lbl">call {call.index}</text>')
        for role, n in p.items():
            if n <= 0:
                continue
            w = max(n / peak * bar_w, 0.5)
            color = _ROLE_COLORS.get(role, _ROLE_COLORS["other"])
            rows.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row_h - 4}" fill="{color}">'
                        f"<title>call {call.index}: {_e(role)} {n} tokens</title></rect>")
            x += w
        reported = call.reported_prompt_tokens
        note = f"{totals[i]}" + (f" (API: {reported})" if reported is not None else "")
        rows.append(f'<text x="{x + 6:.1f}" y="{y + 12}" class="lbl">{_e(note)}</text>')
    legend = "".join(
        f'<rect x="{label_w + k * 90}" y="2" width="10" height="10" fill="{c}"></rect>'
        f'<text x="{label_w + k * 90 + 14}" y="11" class="lbl">{r}</text>'
        for k, (r, c) in enumerate(list(_ROLE_COLORS.items())[:6]))
    return (f'<svg role="img" aria-label="prompt tokens per call" width="{label_w + bar_w + 160}" '
            f'height="{height}" viewBox="0 0 {label_w + bar_w + 160} {height}">{legend}{"".join(rows)}</svg>')


def _message_html(m: dict, mid: str | None = None) -> str:
    if not isinstance(m, dict):
        return f'<div class="msg other"><pre>{_e(json.dumps(m, ensure_ascii=False))}</pre></div>'
    role = m.get("role")
    head = _e(role)
    if m.get("name"):
        head += f" · {_e(m.get('name'))}"
    if m.get("tool_call_id"):
        head += f" · answers {_e(m.get('tool_call_id'))}"
    text = content_text(m.get("content"))
    shown = text[:_MAX_SHOWN_CHARS]
    more = f"\n… {len(text) - _MAX_SHOWN_CHARS} more characters" if len(text) > _MAX_SHOWN_CHARS else ""
    calls = ""
    for tc in m.get("tool_calls") if isinstance(m.get("tool_calls"), list) else []:
        fn = tc.get("function") if isinstance(tc, dict) else None
        fn = fn if isinstance(fn, dict) else {}
        calls += (f'<div class="tc">→ {_e(fn.get("name"))}({_e(fn.get("arguments"))}) '
                  f'<span class="dim">{_e(tc.get("id") if isinstance(tc, dict) else "")}</span></div>')
    if isinstance(m.get("function_call"), dict):
        fc = m["function_call"]
        calls += f'<div class="tc">→ {_e(fc.get("name"))}({_e(fc.get("arguments"))}) (legacy function_call)</div>'
    role_class = role if role in ("system", "user", "assistant", "tool") else "other"
    ident = f' <span class="dim">{_e(mid)}</span>' if mid else ""
    return (f'<div class="msg {role_class}"><div class="role">{head}{ident}</div>'
            f'<pre>{_e(shown + more)}</pre>{calls}</div>')


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#111;max-width:1100px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #eee;padding:4px 6px;text-align:left;
vertical-align:top}th{background:#f6f6f6}.err{color:#b91c1c}.warn{color:#b45309}.dim{color:#6b7280;font-size:12px}
pre{white-space:pre-wrap;word-break:break-word;margin:2px 0;font:12px/1.4 ui-monospace,monospace}
.msg{border-left:4px solid #999;padding:2px 8px;margin:4px 0}.msg.system{border-color:#7c3aed}
.msg.user{border-color:#2563eb}.msg.assistant{border-color:#059669}.msg.tool{border-color:#d97706}
.role{font-weight:600;font-size:12px}.tc{font:12px ui-monospace,monospace;color:#92400e}
.lbl{font:11px system-ui,sans-serif;fill:#374151}details{margin:4px 0}summary{cursor:pointer}
"""


def html_report(trace: Trace, *, profile: str = "openai") -> str:
    """The self-contained report: summary, token chart, findings, timeline, messages."""
    findings, lint_note = _findings(trace, profile)
    by_call: dict[int, list[Any]] = {}
    for f in findings:
        by_call.setdefault(getattr(f, "call", None), []).append(f)
    parts = [_token_parts(c) for c in trace.calls]
    failed = sum(1 for c in trace.calls if c.failed)
    out = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'; '
        'img-src data:; base-uri \'none\'; form-action \'none\'">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>Chain Studio report: {_e(Path(trace.source).name or trace.source)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Chain Studio report: {_e(trace.source)}</h1>",
        "<table>",
        f"<tr><th>format</th><td>{_e(trace.format)}</td></tr>",
        f"<tr><th>models</th><td>{_e(', '.join(trace.models) or '-')}</td></tr>",
        f"<tr><th>calls</th><td>{len(trace.calls)} ({failed} failed)</td></tr>",
        f"<tr><th>messages in the stream</th><td>{len(trace.stream)}</td></tr>",
        f"<tr><th>prompt tokens (counted, all calls)</th><td>{sum(sum(p.values()) for p in parts)}</td></tr>",
        f"<tr><th>findings</th><td>{len(findings)}</td></tr>",
    ]
    if trace.meta.get("redaction") is not None:
        counts = ", ".join(f"{k.lower()} {v}" for k, v in trace.meta["redaction"].items()) or "nothing found"
        out.append(f"<tr><th>redacted</th><td>{_e(counts)}</td></tr>")
    out.append("</table>")
    if trace.warnings:
        out.append("<h2>Loader warnings</h2><ul>" + "".join(f"<li>{_e(w)}</li>" for w in trace.warnings) + "</ul>")
    out.append("<h2>Prompt tokens per call</h2>" + _svg_chart(trace, parts))
    out.append("<h2>Findings</h2>")
    if lint_note:
        out.append(f"<p class=\"warn\">{_e(lint_note)}</p>")
    if findings:
        out.append("<table><tr><th>call</th><th>message</th><th>severity</th><th>rule</th><th>problem</th>"
                   "<th>fix</th></tr>")
        for f in findings:
            sev = getattr(f, "severity", "")
            api = getattr(f, "api_error", None)
            out.append(f"<tr><td>{_e(getattr(f, 'call', ''))}</td><td>{_e(getattr(f, 'index', ''))}</td>"
                       f"<td class=\"{'err' if sev == 'error' else 'warn'}\">{_e(sev)}</td>"
                       f"<td>{_e(getattr(f, 'rule', ''))}</td><td>{_e(getattr(f, 'message', ''))}"
                       + (f"<div class=\"dim\">API: {_e(api)}</div>" if api else "")
                       + f"</td><td>{_e(getattr(f, 'fix', ''))}</td></tr>")
        out.append("</table>")
    elif not lint_note:
        out.append("<p>No findings.</p>")
    out.append(_timeline(trace, by_call, parts))
    out.append("<h2>Message stream</h2>")
    out.extend(_message_html(m.to_openai(), m.id) for m in trace.stream)
    out.append('<p class="dim">Exported by chain-studio. Self-contained: no scripts, nothing loaded.</p>')
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _timeline(trace: Trace, by_call: dict[int, list[Any]], parts: list[dict[str, int]]) -> str:
    pending = sorted(trace.events, key=lambda e: (e.after_add, e.calls_before if e.calls_before is not None else -1))
    out = ["<h2>Timeline</h2>"]

    def show_events_until(position: float, calls_done: int) -> None:
        while pending and (pending[0].after_add < position or (
                pending[0].after_add == position and (pending[0].calls_before or 0) <= calls_done)):
            e = pending.pop(0).event
            out.append(f'<p class="dim">memory: {_e(e.type)} by {_e(e.policy)}, '
                       f"{len(e.removed)} removed, {len(e.added)} added: {_e(e.reason)}</p>")

    previous: list[str | None] = []
    for c, p in zip(trace.calls, parts):
        show_events_until(c.stream_index if c.stream_index is not None else float("inf"), c.index)
        status = "no response" if c.status is None else f"HTTP {c.status}"
        cls = ' class="err"' if c.failed else ""
        reply = c.reply
        reply_text = ""
        if reply:
            calls = reply.get("tool_calls") if isinstance(reply.get("tool_calls"), list) else []
            names = [tc["function"].get("name") for tc in calls
                     if isinstance(tc, dict) and isinstance(tc.get("function"), dict)]
            reply_text = ("calls " + ", ".join(str(n) for n in names)) if names else content_text(reply.get("content"))
        ids = c.message_ids if len(c.message_ids) == len(c.messages) else [None] * len(c.messages)
        known = set(previous)
        fresh = [(m, i) for m, i in zip(c.messages, ids) if i is None or i not in known]
        dropped = len([i for i in previous if i and i not in set(ids)])
        nfind = len(by_call.get(c.index, []))
        summary = (f"<b>call {c.index}</b> · <span{cls}>{_e(status)}</span> · {len(c.messages)} messages "
                   f"(+{len(fresh)} new, −{dropped} dropped) · {sum(p.values())} tokens"
                   + (f" · {c.latency_ms:.0f} ms" if isinstance(c.latency_ms, (int, float)) else "")
                   + (f" · {_e(c.finish_reason)}" if c.finish_reason else "")
                   + (f' · <span class="err">{nfind} finding(s)</span>' if nfind else "")
                   + (f" · {_e(c.started_at)}" if c.started_at else ""))
        body = []
        if c.error:
            body.append(f'<div class="err"><pre>{_e(c.error)}</pre></div>')
        body.append('<div class="dim">new in this payload:</div>')
        body.extend(_message_html(m, i) for m, i in fresh)
        if reply_text:
            body.append(f'<div class="dim">reply:</div><pre>{_e(reply_text[:_MAX_SHOWN_CHARS])}</pre>')
        out.append(f"<details><summary>{summary}</summary>{''.join(body)}</details>")
        previous = [i for i in ids if i]
    show_events_until(float("inf"), len(trace.calls))
    return "\n".join(out)


# --- entry points -------------------------------------------------------------

def export_trace(trace: Trace, fmt: str, *, call: int | None = None, redact: bool = False,
                 profile: str = "openai", output: str | Path | None = None) -> str:
    """The export as text (for ``trace`` the file is written to ``output`` and its path returned)."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; one of {', '.join(FORMATS)}")
    if redact:
        from .redact import redact_trace

        trace = redact_trace(trace)
    if fmt == "json":
        return call_json(trace, call)
    if fmt == "curl":
        return call_curl(trace, call)
    if fmt == "pytest":
        return call_pytest(trace, call)
    if fmt == "payloads":
        return payloads_jsonl(trace)
    if fmt == "html":
        return html_report(trace, profile=profile)
    if fmt == "otlp":
        from .otlp import trace_otlp_json

        return trace_otlp_json(trace, profile=profile)
    if output is None:
        raise ExportError("--as trace writes a file: give -o OUT")
    write_trace(trace, output)
    return str(output)


def export_file(path: str | Path, fmt: str, *, call: int | None = None, redact: bool = False,
                output: str | Path | None = None, profile: str = "openai") -> tuple[str, Path | None]:
    """Load any supported file and export it; returns (text, written path or None for stdout).

    For ``json`` it prints on stderr whether the call's stored body re-serializes to the exact bytes sent
    (``Call.bytes_note``).

    The input is never overwritten: an output path equal to the input is refused.
    """
    source = Path(path)
    if output is not None and source.exists() and Path(output).resolve() == source.resolve():
        raise ExportError(f"{output}: refusing to overwrite the input; choose another -o")
    trace = load_any(source)
    if redact:
        from .redact import redact_trace

        trace = redact_trace(trace)
    text = export_trace(trace, fmt, call=call, profile=profile, output=output)
    if fmt == "json":
        # on stderr, so the output stays the exact payload JSON
        print(pick_call(trace, call).bytes_note, file=sys.stderr)
    if fmt == "trace":
        return text, Path(output)
    if output is None:
        return text, None
    Path(output).write_text(text, encoding="utf-8", errors="backslashreplace")   # lone surrogates: JSON escapes
    return text, Path(output)
