"""``Msg``: one chat message with its lineage, convertible to and from the
OpenAI Chat Completions message dict without loss."""
from __future__ import annotations

import copy
import json
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable

from .ids import new_id

ROLES = ("system", "user", "assistant", "tool")
_KNOWN_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def format_timestamp(ts: datetime) -> str:
    """ISO 8601 in UTC with milliseconds and a ``Z``: ``2026-12-02T13:10:57.123Z``."""
    return ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"


def parse_timestamp(text: str) -> datetime:
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    ts = datetime.fromisoformat(text)
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=timezone.utc)
    return ts.astimezone(timezone.utc)


_KEY_ORDERS: dict[tuple[str, ...], tuple[str, ...]] = {}
_KEY_ORDERS_MAX = 1024


def _key_order(data: dict) -> tuple[str, ...]:
    """``tuple(data)``, one object per distinct order (a trace has a handful: 0.15 MB at 2,600 messages); the
    first ``_KEY_ORDERS_MAX`` orders are kept, so hostile input cannot grow the table."""
    order = tuple(data)
    kept = _KEY_ORDERS.get(order)
    if kept is None and len(_KEY_ORDERS) < _KEY_ORDERS_MAX:
        kept = _KEY_ORDERS[order] = order
        _PLAIN_ORDERS[order] = all(k in _KNOWN_KEYS for k in order)
    return order if kept is None else kept


_PLAIN_ORDERS: dict[tuple, bool] = {}
"""For each kept key order: whether it holds only ``_KNOWN_KEYS`` (``Msg.from_parsed``'s fast path)."""


def openai_dict(m: "Msg") -> dict:
    """``m.to_openai()``, made once per message and kept on it (shared: treat as read-only).

    Every replay, every policy and the probes need each message's dict; a
    ``Msg`` is frozen, so the dict cannot go stale, and keeping it on the
    message gives it the message's lifetime (no global cache to bound). A
    message read from a trace file starts with the file's own body here, the
    same object every payload holds, so counts cached by identity are shared.
    """
    data = m.openai_cache
    if data is None:
        data = m.__dict__["openai_cache"] = m.to_openai()     # frozen: the one write, by design
    return data


@dataclass(frozen=True)
class Msg:
    """One message as the model sees it, plus where it came from."""

    role: str
    """system | user | assistant | tool (imported traces may hold others; the linter reports them)."""
    content: Any = None
    """A string, a list of content parts, or None (assistant messages with tool_calls)."""
    name: str | None = None
    """Optional participant name (OpenAI's ``name`` key)."""
    tool_calls: tuple[dict, ...] | None = None
    """The assistant's tool calls, each ``{"id", "type", "function": {"name", "arguments"}}``."""
    tool_call_id: str | None = None
    """On a tool message: the id of the call it answers."""
    extra: tuple[tuple[str, Any], ...] = ()
    """Keys of the original dict that are none of the above, in their order (kept for lossless round-trips)."""
    id: str = field(default_factory=new_id)
    """Unique; ids minted by one process sort by creation (see ``ids``)."""
    parent_id: str | None = None
    """The message this one follows from (see ``lineage``)."""
    timestamp: datetime = field(default_factory=utc_now)
    """When the message was created, UTC."""
    key_order: tuple[str, ...] = ()
    """Order of the keys in the original dict, so ``to_openai`` rebuilds it exactly."""
    openai_cache: dict | None = field(default=None, init=False, repr=False, compare=False)
    """``to_openai()``, kept by ``openai_dict`` on first use (equality, repr and ``replace`` ignore it)."""

    @classmethod
    def from_openai(cls, data: dict, *, id: str | None = None, parent_id: str | None = None,
                    timestamp: datetime | None = None, copy_values: bool = True) -> "Msg":
        """Build a Msg from a Chat Completions message dict; unknown keys are kept.

        ``copy_values=False`` shares the dict's nested values instead of copying
        them: for a trace reader that owns freshly parsed JSON and never mutates it.
        """
        if not isinstance(data, dict):
            raise TypeError(f"a message must be a JSON object, got {type(data).__name__}")
        role, name, tool_calls, tool_call_id, extra = _typed_fields(data)
        content = data.get("content")
        if copy_values:
            content, tool_calls, extra = copy.deepcopy((content, tool_calls, extra))
        msg = cls(role=role, content=content, name=name, tool_calls=tool_calls,
                  tool_call_id=tool_call_id, extra=extra, id=new_id() if id is None else id,
                  parent_id=parent_id, timestamp=utc_now() if timestamp is None else timestamp,
                  key_order=_key_order(data))
        if not copy_values:     # the dict is shared, not copied: to_openai() would rebuild exactly it
            msg.__dict__["openai_cache"] = data
        return msg

    @classmethod
    def from_parsed(cls, data: dict, id: str, parent_id: str | None, timestamp: datetime) -> "Msg":
        """``from_openai(data, copy_values=False, ...)`` without the dataclass ``__init__``.

        For the trace reader, which makes one per add from JSON it owns; setting
        ten frozen fields one by one was most of its per-message cost.
        """
        if not isinstance(data, dict):
            raise TypeError(f"a message must be a JSON object, got {type(data).__name__}")
        order = _key_order(data)
        get = data.get
        role, name, tool_calls, tool_call_id = get("role"), get("name"), get("tool_calls"), get("tool_call_id")
        if _PLAIN_ORDERS.get(order, False) and (role is None or type(role) is str) and \
                (name is None or type(name) is str) and (tool_call_id is None or type(tool_call_id) is str):
            # known keys only, each of its field's type (``_typed_fields``' answer, at a third of its cost)
            extra: tuple = ()
            if tool_calls is not None:
                if type(tool_calls) is list:
                    tool_calls = tuple(tool_calls)
                else:
                    role, name, tool_calls, tool_call_id, extra = _typed_fields(data)
        else:
            role, name, tool_calls, tool_call_id, extra = _typed_fields(data)
        msg = object.__new__(cls)
        msg.__dict__.update(
            role=role, content=get("content"), name=name, tool_calls=tool_calls,
            tool_call_id=tool_call_id, extra=extra,
            id=id, parent_id=parent_id, timestamp=timestamp, key_order=order)
        msg.__dict__["openai_cache"] = data    # to_openai() would rebuild exactly this dict
        return msg

    def with_parent(self, parent_id: str | None) -> "Msg":
        """This message with ``parent_id`` set: ``dataclasses.replace`` without ``__init__`` (a lineage pass over
        200,000 imported messages spent most of its time there); ``openai_cache`` stays, as ids are not sent."""
        other, put = object.__new__(type(self)), object.__setattr__
        for name, value in self.__dict__.items():     # one by one, in order: the instances keep sharing keys
            put(other, name, value)
        put(other, "parent_id", parent_id)
        return other

    def to_openai(self) -> dict:
        """The Chat Completions dict: exactly the keys the original had, in its order."""
        values: dict[str, Any] = {
            "role": self.role,
            "content": self.content,
            "name": self.name,
            "tool_calls": list(self.tool_calls) if isinstance(self.tool_calls, tuple) else self.tool_calls,
            "tool_call_id": self.tool_call_id,
        }
        values.update(self.extra)
        if self.key_order:
            order: Iterable[str] = self.key_order
        else:
            order = ["role", "content"] + [
                k for k in ("name", "tool_calls", "tool_call_id") if values[k] is not None
            ] + [k for k, _ in self.extra]
        return {k: copy.deepcopy(values[k]) for k in order}

    @property
    def tool_call_ids(self) -> list[str]:
        """The ids of this message's tool calls (empty when it has none; None for an id that is not a string)."""
        return [tc.get("id") if isinstance(tc.get("id"), str) else None
                for tc in (self.tool_calls or ()) if isinstance(tc, dict)]

    @property
    def text(self) -> str:
        """Content as plain text, for search and display (content parts joined)."""
        return content_text(self.content)

    def export(self) -> dict:
        """Plain dict with lineage, as stored in a trace."""
        return {
            "id": self.id,
            "parent_id": self.parent_id,
            "timestamp": format_timestamp(self.timestamp),
            "message": self.to_openai(),
        }

    @classmethod
    def from_export(cls, data: dict) -> "Msg":
        return cls.from_openai(
            data["message"], id=data["id"], parent_id=data.get("parent_id"),
            timestamp=parse_timestamp(data["timestamp"]),
        )


def _typed_fields(data: dict) -> tuple[Any, Any, Any, Any, tuple]:
    """role, name, tool_calls, tool_call_id and extra of a message dict, validated at the boundary.

    A message from a file may hold anything under a known key (``"tool_calls": 7``, ``"tool_call_id": [..]``,
    ``"role": {..}``). Code reading a ``Msg`` relies on the field types, so a value of the wrong type is
    not put in its field: the field gets ``None`` (a role: its JSON text, so it is still shown and the
    linter names it) and the value itself is kept in ``extra`` under its own key, where ``to_openai``
    puts it back: the message still round-trips to exactly what was sent, and the linter, which reads
    the native body, reports it at its JSON path.
    """
    get = data.get
    role, name, tool_calls, tool_call_id = get("role"), get("name"), get("tool_calls"), get("tool_call_id")
    extra = [(k, v) for k, v in data.items() if k not in _KNOWN_KEYS]
    if role is not None and not isinstance(role, str):
        extra.append(("role", role))
        role = _json_text(role)
    if name is not None and not isinstance(name, str):
        extra.append(("name", name))
        name = None
    if isinstance(tool_calls, list):
        tool_calls = tuple(tool_calls)
    elif tool_calls is not None:
        extra.append(("tool_calls", tool_calls))
        tool_calls = None
    if tool_call_id is not None and not isinstance(tool_call_id, str):
        extra.append(("tool_call_id", tool_call_id))
        tool_call_id = None
    return role, name, tool_calls, tool_call_id, tuple(extra)


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):
        return repr(value)[:200]


def content_text(content: Any) -> str:
    """Flatten string or content-part content to text; anything else as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                parts.append(json.dumps(part, ensure_ascii=False))
        return "\n".join(parts)
    return json.dumps(content, ensure_ascii=False)


def _not_serializable(value: Any) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")   # json's own text


# json.dumps(..., separators=...) builds an encoder per call, most of its cost on a small message: build the C one
# once (no circular check: a key is taken of parsed JSON, which cannot hold a cycle).
_ENCODE = c_make_encoder(None, _not_serializable, encode_basestring, None, ":", ",", False, False, True) \
    if c_make_encoder is not None else None


def message_key(message: dict) -> str:
    """The canonical serialization of a message dict, key order kept: ``json.dumps(message, ensure_ascii=False,
    separators=(",", ":"))``, character for character.

    Two dicts with the same key is the same body on the wire; traces store
    each distinct key once.
    """
    if _ENCODE is None:
        return json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    return "".join(_ENCODE(message, 0))
