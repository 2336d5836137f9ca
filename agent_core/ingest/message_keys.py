"""When two payload messages are the same message: the keys payload-log inference compares.

- ``exact_key``: the body's exact JSON text (``msg.message_key``), never raising.
- ``norm_key``: equal after normalization (key order, whitespace, None vs
  missing, "" vs None content, a single text part vs a string, tool-call
  arguments as canonical JSON).
- ``loose_key``: role, text and tool calls only: a response's message vs the
  copy an app sends back.
"""
from __future__ import annotations

import contextlib
import difflib
import json
import threading
from typing import Any

from agent_core.core.msg import content_text

SIMILAR = 0.6
"""Text similarity (difflib ratio) at which an unmatched message rewrites an old one."""
SIMILARITY_CHARS = 4000
"""Only this much of each text is compared, so a huge message costs what a big one does."""
MAX_DEPTH = 64
"""Deeper nesting than any real message: such a message gets no id (and cannot overflow anything)."""

# One encoder, called directly: the same text as ``msg.message_key`` without json.dumps' per-call setup.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def safe_dumps(value: Any) -> str:
    try:
        return _ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError):
        return f"<unserializable:{id(value)}>"


_MEMO = threading.local()


@contextlib.contextmanager
def remembered_keys():
    """Within this block ``exact_key`` serializes each message object once (a streamed log interns equal
    messages into one object, so a full-history log costs its distinct messages, not every payload)."""
    outer = getattr(_MEMO, "keys", None)
    _MEMO.keys = {} if outer is None else outer
    try:
        yield
    finally:
        _MEMO.keys = outer


def exact_key(message: Any) -> str:
    """``msg.message_key`` (the same text), never raising."""
    memo = getattr(_MEMO, "keys", None)
    if memo is None or not isinstance(message, dict):
        return safe_dumps(message)
    hit = memo.get(id(message))
    if hit is not None and hit[0] is message:     # the entry holds the object: its id cannot be reused
        return hit[1]
    key = safe_dumps(message)
    memo[id(message)] = (message, key)
    return key


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Nested deeper than any real message (checked without recursion, so it cannot overflow)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item if isinstance(v, (dict, list)))
    return False


def _norm_text(text: str) -> str:
    return " ".join(text.split())


def _canonical_args(args: Any) -> Any:
    if isinstance(args, str):
        try:
            return _normalize(json.loads(args))
        except (ValueError, RecursionError):
            return _norm_text(args)
    return _normalize(args)


def _normalize(value: Any, depth: int = 0) -> Any:
    """Whitespace, key order and None-vs-missing no longer matter."""
    if depth > 200:
        return safe_dumps(value)
    if isinstance(value, str):
        return _norm_text(value)
    if isinstance(value, list):
        return [_normalize(v, depth + 1) for v in value]
    if isinstance(value, dict):
        out = {}
        for k in sorted(value, key=str):
            v = value[k]
            if v is None or (k in ("tool_calls", "annotations") and v == []):
                continue
            if k == "arguments":
                out[str(k)] = _canonical_args(v)
            else:
                out[str(k)] = _normalize(v, depth + 1)
        return out
    return value


def _norm_message(message: Any) -> Any:
    if not isinstance(message, dict):
        return _normalize(message)
    m = dict(message)
    content = m.get("content")
    if content == "":
        m["content"] = None
    elif isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict) \
            and content[0].get("type") == "text" and isinstance(content[0].get("text"), str):
        m["content"] = content[0]["text"]
    return _normalize(m)


def norm_key(message: Any) -> str:
    return safe_dumps(_norm_message(message))


REPLY_ROLES = ("assistant", "model")
"""The role of the model's own turn: Chat Completions and Anthropic ``assistant``, Gemini ``model``."""


def loose_key(message: Any) -> str:
    """Role, text and tool calls only: a response's message vs the copy an app sends back (Gemini: its parts,
    normalized, since its function calls live there)."""
    if not isinstance(message, dict):
        return norm_key(message)
    core: dict[str, Any] = {"role": message.get("role"), "content": _norm_text(content_text(message.get("content")))}
    if isinstance(message.get("parts"), list):
        core["parts"] = _normalize(message["parts"])
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        core["tool_calls"] = [
            [c.get("id"), (c.get("function") or {}).get("name"), _canonical_args((c.get("function") or {}).get("arguments"))]
            if isinstance(c, dict) and isinstance(c.get("function") or {}, dict) else _normalize(c) for c in calls]
    fc = message.get("function_call")
    if isinstance(fc, dict):
        core["function_call"] = [fc.get("name"), _canonical_args(fc.get("arguments"))]
    return safe_dumps(core)


def tool_ids(message: dict) -> tuple:
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        return tuple(c.get("id") for c in calls if isinstance(c, dict))
    return ()


class Norms:
    """Normalized keys of a payload's messages, computed only for the ones that need them."""

    def __init__(self, messages: list) -> None:
        self._messages = messages
        self._keys: dict[int, str] = {}

    def __getitem__(self, j: int) -> str:
        key = self._keys.get(j)
        if key is None:
            key = self._keys[j] = norm_key(self._messages[j])
        return key


def rewritten_slot(message: Any, gap: list[tuple[int, dict]], interior: bool) -> int | None:
    """The previous-payload slot this unmatched message rewrites, if any."""
    if not isinstance(message, dict) or not gap:
        return None
    role = message.get("role")
    same_role = [(i, old) for i, old in gap if old.get("role") == role]
    if not same_role:
        return None
    if role == "tool" and message.get("tool_call_id"):
        return next((i for i, old in same_role if old.get("tool_call_id") == message.get("tool_call_id")), None)
    if tool_ids(message):
        return next((i for i, old in same_role if tool_ids(old) == tool_ids(message)), None)
    text = content_text(message.get("content"))[:SIMILARITY_CHARS]
    for i, old in same_role:
        old_text = content_text(old.get("content"))[:SIMILARITY_CHARS]
        if tool_ids(old):
            continue
        shorter, longer = sorted((text, old_text), key=len)
        if len(shorter) >= 8 and shorter in longer:
            return i
        if difflib.SequenceMatcher(None, text, old_text, autojunk=False).ratio() >= SIMILAR:
            return i
    if interior and len(same_role) == 1 and len(gap) == 1:
        return same_role[0][0]
    return None


