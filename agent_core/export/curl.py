"""Where a recorded call went: the base URL a curl command or a re-send should use.

The command itself belongs to the wire API (``WireApi.curl`` in ``agent_core.apis``).
"""
from __future__ import annotations

from agent_core.apis.base import split_endpoint
from agent_core.apis.chat_completions import strip_credentials
from agent_core.trace.model import Call


def call_base_url(call: Call) -> str | None:
    """The base URL the call's last attempt to a known API endpoint went to, credentials removed; None if none."""
    for attempt in reversed(call.attempts):
        hit = split_endpoint(attempt.url or "")
        if hit:
            return strip_credentials(hit[1])
    return None
