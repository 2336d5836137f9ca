"""What the scan needs to know about a message wherever it sits, worked out once per distinct message.

A windowed replay of a long chain re-sends each message in many payloads at shifting positions (max-messages at
25,000 calls feeds about 40 messages per call: a million feeds over 50,000 distinct messages). Whether a message
is a JSON object, whether every field it has is of the type the API defines (``shape.wrong_types`` empty) and
whether it is a plain turn (a known role, content present, no calls, no reasoning, no legacy function call) does
not depend on its position or on the payload around it, so ``lint_trace`` keeps the answer beside the message's
entry and ``_Scan.feed`` skips the checks that can only come out empty. The findings are exactly those of the
full checks: a kind only ever skips a check whose answer it already knows.
"""
from __future__ import annotations

from agent_core.apis.chain import MISSING, Entry

from .shape import well_typed

GENERAL = 0
"""Every check runs (not an object, or a field of the wrong type)."""
TYPED = 1
"""A JSON object whose every field has its API type: ``check_types`` finds nothing."""
PLAIN = 2
"""``TYPED``, a known non-tool role, content present, no tool calls, function call or reasoning: only the order
rules (system after the start, user right after a tool result) and the pairing state can say anything."""

_PLAIN_ROLES = frozenset({"system", "developer", "user", "assistant"})


def entry_kind(e: Entry) -> int:
    """``GENERAL``, ``TYPED`` or ``PLAIN`` for ``e``; depends on the entry alone (not its index, profile or payload)."""
    if type(e.native) is not dict or not well_typed(e):
        return GENERAL
    if (e.role in _PLAIN_ROLES and e.content is not MISSING and e.content is not None
            and (e.calls_native is MISSING or e.calls_native is None) and e.legacy_call is None
            and e.reasoning is MISSING):
        return PLAIN
    return TYPED
