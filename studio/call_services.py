"""One call's long texts and exports for the studio: the request and response as paged JSON, curl, pytest, HTML.

Beside ``services.py`` (which loads traces and caches the view models); the same rule holds: screens and
components reach agent_core only through the ``*services`` modules. Cached by trace digest and call.
"""
from __future__ import annotations

import json
import os

import streamlit as st

from agent_core.apis.base import api_for_body
from agent_core.export.curl import call_base_url
from agent_core.export.redact import redact_trace
from agent_core.trace.model import Trace
from agent_core.trace.tokens import counter_for
from studio.services import Loaded, Source
from studio.viewmodels import preview as _preview

DEMO_MODEL_URL = "http://127.0.0.1:8765/v1"
"""Where ``chain-studio demo-model`` serves by default (a recording's demo port was a random, now dead one)."""


def default_base_url() -> tuple[str, bool]:
    """(the base URL a re-send should use, whether it is the demo model): the configured endpoint
    ($OPENAI_BASE_URL, or OpenAI when only a key is set), else ``chain-studio demo-model``'s port."""
    base = os.environ.get("OPENAI_BASE_URL")
    if base:
        return base, False
    if os.environ.get("OPENAI_API_KEY"):
        return "https://api.openai.com/v1", False
    return DEMO_MODEL_URL, True


def recorded_base_url(loaded: Loaded, call: int) -> str | None:
    """The base URL the call went to when it was recorded (credentials removed), if known."""
    return call_base_url(loaded.trace.calls[call])


def curl_command(loaded: Loaded, call: int, base_url: str | None = None) -> str:
    """The curl command for the call, sent to ``base_url`` (default: ``default_base_url()``)."""
    request = loaded.trace.calls[call].request
    return api_for_body(request).curl(request, base_url or default_base_url()[0])


# --- exports (agent_core/export) ------------------------------------------------

CALL_EXPORTS = {"json": ("json", "application/json"), "curl": ("sh", "text/x-shellscript"),
                "pytest": ("py", "text/x-python")}
"""Per-call export formats: file suffix and MIME type."""


def export_call(loaded: Loaded, call: int, fmt: str, redact: bool = False, base_url: str | None = None) -> str:
    """Call ``call`` as ``json`` / ``curl`` / ``pytest`` text, optionally redacted (export layer).

    A curl export defaults to ``base_url`` (the curl tab's box, else ``default_base_url()``), not the
    recording's base URL, which for the demo model was a random port that is gone.
    """
    from agent_core.export.formats import call_curl, export_trace

    # With the sidebar's redaction on, loaded.trace is the redacted copy already: it stays redacted.
    if fmt == "curl":
        trace = redact_trace(loaded.trace) if redact else loaded.trace
        return call_curl(trace, call, base_url or default_base_url()[0])
    return export_trace(loaded.trace, fmt, call=call, redact=redact)


def export_report(loaded: Loaded, profile: str, redact: bool = False) -> str:
    """The trace as a self-contained HTML report (no scripts), optionally redacted."""
    return _report(loaded.digest, loaded.trace, profile, redact)


@st.cache_data(max_entries=8, show_spinner=False)
def _report(digest: str, _trace: Trace, profile: str, redact: bool) -> str:
    from agent_core.export.formats import export_trace

    return export_trace(_trace, "html", redact=redact, profile=profile)


def message_tokens_at(loaded: Loaded, call: int, messages: list, indexes) -> dict[int, int]:
    """Tokens of the messages at ``indexes`` of a call's payload ``messages`` (only those a screen shows: a
    12,000-message payload is not serialized to count the 25 on screen)."""
    counter = counter_for(loaded.trace.calls[call].model)
    return {i: counter.count_message(messages[i]) if isinstance(messages[i], dict) else 0 for i in indexes}


# One call's long texts, cached by digest and call (cache_resource: a 15 MB string is not re-pickled per rerun).
@st.cache_resource(max_entries=8, show_spinner=False)
def _body_pages(digest: str, _trace: Trace, call: int, part: str) -> _preview.TextPages:
    value = _trace.calls[call].request if part == "request" else _trace.calls[call].response
    return _preview.text_pages(json.dumps(value, ensure_ascii=False, indent=2))


def request_json(loaded: Loaded, call: int) -> _preview.TextPages:
    """The call's request body as indented JSON, in pages (the Raw JSON tab)."""
    return _body_pages(loaded.digest, loaded.trace, call, "request")


def response_json(loaded: Loaded, call: int) -> _preview.TextPages:
    """The call's response body as indented JSON, in pages (the Response tab)."""
    return _body_pages(loaded.digest, loaded.trace, call, "response")


@st.cache_resource(max_entries=8, show_spinner=False)
def _curl_pages(digest: str, _trace: Trace, call: int, base_url: str | None) -> _preview.TextPages:
    return _preview.text_pages(curl_command(Loaded(Source("", "", ""), digest, _trace), call, base_url))


def curl_pages(loaded: Loaded, call: int, base_url: str | None = None) -> _preview.TextPages:
    """``curl_command`` in pages (the curl tab)."""
    return _curl_pages(loaded.digest, loaded.trace, call, base_url)
