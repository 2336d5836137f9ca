"""Curl helpers at the trace level: where a recorded call went.

The command itself belongs to the wire API (``agent_core.apis``); ``curl_command``
and ``chat_url`` are re-exported here because the studio imports them here.
"""
from __future__ import annotations

from agent_core.apis.base import split_endpoint
from agent_core.apis.chat_completions import chat_url, curl_command, strip_credentials
from agent_core.trace.model import Call

__all__ = ["call_base_url", "chat_url", "curl_command"]


def call_base_url(call: Call) -> str | None:
    """The base URL the call's last attempt to a known API endpoint went to, credentials removed; None if none."""
    for attempt in reversed(call.attempts):
        hit = split_endpoint(attempt.url or "")
        if hit:
            return strip_credentials(hit[1])
    return None
