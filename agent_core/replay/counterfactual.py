"""Counterfactual: send a replayed payload again and see what comes back."""
from __future__ import annotations

from dataclasses import dataclass

from .result import ReplayedCall


@dataclass
class Resend:
    """A replayed payload sent again, and what came back."""

    call: int | None
    """The replayed call it re-sent (None for a bare payload)."""
    reply: dict | None
    """The new assistant message."""
    response: dict | None
    """The whole response body."""
    error: str | None
    """One sentence when the endpoint refused or failed (a 400 for an orphan tool, say)."""
    endpoint: str
    """Host it went to (``127.0.0.1:port`` for the demo model)."""


def resend(payload: ReplayedCall | list[dict], endpoint=None, *, tools: list[dict] | None = None,  # noqa: ANN001
           recorder=None) -> Resend:  # noqa: ANN001
    """Send a replayed payload to ``endpoint`` (default: the configured one, else the demo model
    started for this one call). Recorded with ``purpose="counterfactual"`` if ``recorder`` is given."""
    from agent_core.chat.client import LLMClient
    from agent_core.chat.connection import Connection, connect
    from agent_core.core.errors import EndpointError

    call = payload.call if isinstance(payload, ReplayedCall) else None
    messages = payload.messages if isinstance(payload, ReplayedCall) else payload
    if tools is None and isinstance(payload, ReplayedCall):
        tools = payload.tools
    connection = Connection(endpoint) if endpoint is not None else connect()
    endpoint = connection.endpoint
    client = LLMClient(endpoint, recorder=recorder, max_retries=0)
    try:
        response = client.complete(messages, tools, purpose="counterfactual")
        reply = (response.get("choices") or [{}])[0].get("message")
        return Resend(call, reply, response, None, endpoint.host)
    except EndpointError as err:
        return Resend(call, None, None, str(err), endpoint.host)
    finally:
        client.close()
        connection.close()

