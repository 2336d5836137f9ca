"""A curl command that re-sends a recorded request body exactly.

The key is never inside: the command reads it from ``$OPENAI_API_KEY`` at
run time, so a copied command is safe to paste into a ticket.
"""
from __future__ import annotations

import json
import shlex
from urllib.parse import urlsplit, urlunsplit

from agent_core.trace.model import Call

DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEY_VARIABLE = "OPENAI_API_KEY"


def chat_url(base_url: str | None) -> str:
    """``<base>/chat/completions`` for a base URL (a full completions URL is kept as is)."""
    base = (base_url or DEFAULT_BASE_URL).rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    return base + "/chat/completions"


def _strip_credentials(url: str) -> str:
    parts = urlsplit(url)
    if "@" in parts.netloc:
        parts = parts._replace(netloc=parts.netloc.rsplit("@", 1)[1])
    return urlunsplit(parts)


def curl_command(body: dict, base_url: str | None = None) -> str:
    """The shell command that POSTs ``body`` to ``base_url``.

    Args:
        body: the exact request body (``Call.request``).
        base_url: an OpenAI-compatible base URL; default the OpenAI API.

    Returns:
        A multi-line POSIX shell command; the body is single-quoted verbatim
        (JSON with non-ASCII kept), the key comes from ``$OPENAI_API_KEY``.
    """
    url = _strip_credentials(chat_url(base_url))
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return (
        f"curl {shlex.quote(url)} \\\n"
        f"  -H 'Content-Type: application/json' \\\n"
        f"  -H \"Authorization: Bearer ${KEY_VARIABLE}\" \\\n"
        f"  -d {shlex.quote(data)}"
    )


def call_base_url(call: Call) -> str | None:
    """The base URL a recorded call went to (its attempt URL minus ``/chat/completions``)."""
    for attempt in reversed(call.attempts):
        if attempt.url:
            url = attempt.url.split("?", 1)[0]
            return url[: -len("/chat/completions")] if url.endswith("/chat/completions") else url
    return None
