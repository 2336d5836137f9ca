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

import json
import re
from typing import Any

from agent_core.apis.chain import MISSING, Entry

from .shape import well_typed

GENERAL = 0
"""Every check runs (not an object, or a field of the wrong type)."""
TYPED = 1
"""A JSON object whose every field has its API type: ``check_types`` finds nothing."""
PLAIN = 2
"""``TYPED``, a known non-tool role, content present, no tool calls, function call or reasoning: only the order
rules (system after the start, user right after a tool result) and the pairing state can say anything."""

CALLS = 3
"""``TYPED``, an assistant message whose tool calls are all well formed on their own: each an object with a
non-empty id (none repeated within the message), a type, a valid function name and arguments holding a JSON
object. What the scan still checks (``feed_calls``): the profile's id form, ids reused from earlier messages,
undeclared tools, the pairing with the results after it."""

NAME_RE = re.compile(r"^[a-zA-Z0-9_-]+$")
"""A valid function name (letters, digits, ``_`` and ``-``)."""

_PLAIN_ROLES = frozenset({"system", "developer", "user", "assistant"})


def entry_kind(e: Entry) -> int:
    """``GENERAL``, ``TYPED`` or ``PLAIN`` for ``e``; depends on the entry alone (not its index, profile or payload)."""
    if type(e.native) is not dict or not well_typed(e):
        return GENERAL
    if (e.role in _PLAIN_ROLES and e.content is not MISSING and e.content is not None
            and (e.calls_native is MISSING or e.calls_native is None) and e.legacy_call is None
            and e.reasoning is MISSING):
        return PLAIN
    return CALLS if e.role == "assistant" and _calls_well_formed(e) else TYPED


def _calls_well_formed(e: Entry) -> bool:
    calls = e.calls
    if type(e.calls_native) is not list or not calls or len({c.id for c in calls}) != len(calls):
        return False
    for c in calls:
        if c.defect is not None or type(c.id) is not str or not c.id or type(c.type) is not str \
                or type(c.name) is not str or not NAME_RE.match(c.name) or type(c.arguments) is not str:
            return False
        try:
            if type(json.loads(c.arguments)) is not dict:
                return False
        except (ValueError, RecursionError):
            return False
    return True


def feed_calls(scan: Any, e: Entry, i: int) -> None:
    """``_Scan._tool_calls`` for a ``CALLS`` entry at index ``i``: the checks that depend on the profile and on
    what came before, in the same order and with the same findings, and the pairing state."""
    if scan.first_call_index is None:
        scan.first_call_index = i
    content = e.content
    block0 = 1 if (isinstance(content, str) and content) or (isinstance(content, list) and content) else 0
    limit, pattern, seen = scan.p.max_tool_call_id, scan.p.tool_call_id_pattern, scan.ids_seen
    check_names = scan.check_tools and scan.declared is not None and scan.tools_given
    ids: list[str] = []
    for call in e.calls:
        cid = call.id
        if (limit is not None and len(cid) > limit) or pattern is not None or cid in seen:
            scan._check_id(i, call, block0, {})      # ids are unique within the message: no earlier one here
        if check_names and call.name not in scan.declared:
            scan._undeclared(i, call, [cid])
        ids.append(cid)
    if scan.thinking and e.reasoning is MISSING:
        scan.emit("missing-reasoning-content", i, ids, f"The assistant tool-call message at index {i} does not "
                  "echo its reasoning_content, which thinking mode requires in a tool loop.", fill={"i": i},
                  path=scan._p(e.at("reasoning")))
    for cid in ids:
        seen.setdefault(cid, i)
    scan.run_owner = i
    scan.run_ids = ids
    scan.run_answered = {}
    scan.run_order = []
    scan.owner_anth[i] = scan.anth_n
    scan.call_paths[i] = (e, i, {c.id: c for c in e.calls})
